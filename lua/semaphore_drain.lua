-- Take every available permit of a counting semaphore: set the count to 0 and return what it was (0
-- when the semaphore does not exist, which stays so). Nobody can proceed afterwards: nothing is
-- announced.
-- KEYS[1] semaphore.
local v = redis.call('get', KEYS[1])
if v == false then
  return 0
end
if tonumber(v) == nil then
  return redis.error_reply('ERR semaphore count is not an integer')
end
redis.call('set', KEYS[1], '0', 'keepttl')
return tonumber(v)
