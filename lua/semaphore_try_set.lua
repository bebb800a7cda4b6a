--! KEYS semaphore channel waiters clients wake grants memo
--! ARGV permits publish numsub ttl rid
-- Set the permits of a counting semaphore unless it has been set before, and hand them to waiters or
-- announce them (semaphore_wake.lua, count.lua and once.lua come first). A key that holds anything but
-- a count is refused, and left as it is. ttl: the semaphore's time to live in
-- ms ('0': none). Returns 1 when set, 0 when the semaphore existed already (nothing changed); exactly
-- once by its memo.
local memo = KEYS[7] .. ARGV[5]
local found, reply = recall(memo)
if found then
  return reply
end
if redis.call('exists', KEYS[1]) == 1 then
  local _, refused = read_count(KEYS[1])
  return refused or remember(memo, 0)
end
if ARGV[4] == '0' then
  redis.call('set', KEYS[1], ARGV[1])
else
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[4])
end
wake(KEYS[1], tonumber(ARGV[1]), KEYS[3], KEYS[4], KEYS[6], KEYS[2], KEYS[5], ARGV[2], ARGV[3])
return remember(memo, 1)
