-- Add permits to a counting semaphore (a release, or an adjustment that may make the count negative)
-- and wake waiters that the new count can serve (semaphore_wake.lua comes first).
-- KEYS[1] semaphore, KEYS[2] channel, KEYS[3] waiter records, KEYS[4] clients, KEYS[5] wake channel
-- prefix; ARGV[1] permits to add (may be negative), ARGV[2] publish command, ARGV[3] numsub command.
-- Returns the new count.
local n = redis.call('incrby', KEYS[1], ARGV[1])
wake(n, KEYS[3], KEYS[4], KEYS[2], KEYS[5], ARGV[2], ARGV[3])
return n
