-- Take permits from a counting semaphore (Redisson's layout: a string holding the available count; a
-- missing key counts as 0).
-- KEYS[1] semaphore; ARGV[1] permits wanted.
-- Returns 1 when they were taken, 0 when fewer are available.
local v = redis.call('get', KEYS[1])
if v == false then
  return 0
end
local available = tonumber(v)
if available == nil then
  return redis.error_reply('ERR semaphore count is not an integer')
end
if available < tonumber(ARGV[1]) then
  return 0
end
redis.call('decrby', KEYS[1], ARGV[1])
return 1
