-- Add permits to a counting semaphore (a release, or an adjustment that may make the count negative)
-- and hand them to waiters, or announce the new count (semaphore_wake.lua comes first).
-- KEYS[1] semaphore, KEYS[2] channel, KEYS[3] waiter records, KEYS[4] clients, KEYS[5] wake channel
-- prefix, KEYS[6] grants; ARGV[1] permits to add (may be negative), ARGV[2] publish command,
-- ARGV[3] numsub command ('' to wake as Redisson does), ARGV[4] '1' to add only when the semaphore
-- exists (Redisson's releaseIfExists).
-- Returns the new count, before any hand-over; nil when the semaphore does not exist and ARGV[4] is '1'.
if ARGV[4] == '1' and redis.call('exists', KEYS[1]) == 0 then
  return false
end
local n = redis.call('incrby', KEYS[1], ARGV[1])
wake(KEYS[1], n, KEYS[3], KEYS[4], KEYS[6], KEYS[2], KEYS[5], ARGV[2], ARGV[3])
return n
