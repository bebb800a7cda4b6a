--! KEYS semaphore channel waiters clients wakes grants memo
--! ARGV rid
-- Delete a counting semaphore and what this library keeps beside it: waiter records, clients and
-- grants (semaphore_wake.lua). Nothing is published, as in Redisson: nobody can proceed. Returns 1
-- when the semaphore existed; exactly once by its memo. A key that holds anything but a count, or a
-- side key of another type, is refused: nothing is deleted.
--! INCLUDE count.lua once.lua answered.lua
local semaphore, waiters, clients, grants, memo = KEYS[1], KEYS[3], KEYS[4], KEYS[6], KEYS[7]
local rid = ARGV[1]
memo = memo .. rid
local done, reply = answered(memo, true, read_count, semaphore)
if done then return reply end
-- What is kept beside it goes too, unless one of them holds another type: then nothing goes.
for _, k in ipairs({{waiters, 'zset'}, {clients, 'zset'}, {grants, 'hash'}}) do
  local t = redis.call('type', k[1])
  t = type(t) == 'table' and t.ok or t
  if t ~= 'none' and t ~= k[2] then
    --! INCLUDE refuse.lua
    return refuse(k[1], t)
  end
end
local n = redis.call('del', semaphore)
redis.call('del', waiters, clients, grants)
return remember(memo, n)
