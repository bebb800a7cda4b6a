--! KEYS semaphore channel waiters clients wakes grants memo
--! ARGV permits publish numsub ttl rid
-- Set the permits of a counting semaphore unless it has been set before, and hand them to waiters or
-- announce them (semaphore_wake.lua). A key that holds anything but a count is refused, and left as
-- it is. ttl: the semaphore's time to live in ms ('0': none). Returns 1 when set, 0 when the
-- semaphore existed already (nothing changed); exactly once by its memo.
--! INCLUDE wake_records.lua semaphore_wake.lua count.lua once.lua
local semaphore, channel, waiters, clients, wakes, grants, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local permits, publish, numsub, ttl, rid = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
if redis.call('exists', semaphore) == 1 then
  local _, refused = read_count(semaphore)
  return refused or remember(memo, 0)
end
if ttl == '0' then
  redis.call('set', semaphore, permits)
else
  redis.call('set', semaphore, permits, 'px', ttl)
end
wake(semaphore, tonumber(permits), waiters, clients, grants, channel, wakes, publish, numsub)
return remember(memo, 1)
