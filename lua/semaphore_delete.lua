--! KEYS semaphore channel waiters clients wake grants memo
--! ARGV rid
-- Delete a counting semaphore and what this library keeps beside it: waiter records, clients and
-- grants (semaphore_wake.lua). Nothing is published, as in Redisson: nobody can proceed. Returns 1
-- when the semaphore existed; count.lua and once.lua come first: exactly once by its memo. A key that
-- holds anything but a count, or a side key of another type, is refused: nothing is deleted.
local memo = KEYS[7] .. ARGV[1]
local found, reply = recall(memo)
if found then
  return reply
end
local _, refused = read_count(KEYS[1])
if refused then
  return refused
end
-- What is kept beside it goes too, unless one of them holds another type: then nothing goes.
for _, k in ipairs({{KEYS[3], 'zset'}, {KEYS[4], 'zset'}, {KEYS[6], 'hash'}}) do
  local t = redis.call('type', k[1])
  t = type(t) == 'table' and t.ok or t
  if t ~= 'none' and t ~= k[2] then
    --! INCLUDE refuse.lua
    return refuse(k[1], t)
  end
end
local n = redis.call('del', KEYS[1])
redis.call('del', KEYS[3], KEYS[4], KEYS[6])
return remember(memo, n)
