--! KEYS semaphore channel waiters clients wakes grants memo
--! ARGV permits publish numsub ifexists rid
-- Add permits to a counting semaphore (a release, or an adjustment that may make the count negative)
-- and hand them to waiters, or announce the new count (semaphore_wake.lua). permits: how many to add
-- (may be negative); numsub: '' to wake as Redisson does; ifexists: '1' to add only when the semaphore
-- exists (Redisson's releaseIfExists).
-- Returns the new count, before any hand-over; nil when the semaphore does not exist and ifexists is
-- '1'. Exactly once by its memo (once.lua).
-- MODE 2 gives back the permits of an acquisition whose answer never came, rid being that
-- acquisition's: only if its memo says that it took them, once (the memo then says 'undone'), and
-- only to a semaphore that still exists.
--! INCLUDE wake_records.lua semaphore_wake.lua once.lua
local semaphore, channel, waiters, clients, wakes, grants, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local permits, publish, numsub, ifexists, rid = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
if undone(memo) then
  return false -- the acquisition took nothing, or was given back already
end
if ifexists == '1' and redis.call('exists', semaphore) == 0 then
  return remember(memo, nil)
end
local n = redis.pcall('incrby', semaphore, permits)
if type(n) == 'table' then
  -- Not a count (a key of another type, a string that is not a number): refused, unchanged.
  --! INCLUDE refuse.lua
  return refuse(semaphore, nil, n.err)
end
wake(semaphore, n, waiters, clients, grants, channel, wakes, publish, numsub)
return remember(memo, n)
