--! KEYS semaphore memo
--! ARGV rid
-- Take every available permit of a counting semaphore: set the count to 0 and return what it was (0
-- when the semaphore does not exist, which stays so). Nobody can proceed afterwards: nothing is
-- announced. once.lua comes first: exactly once by its memo.
local memo = KEYS[2] .. ARGV[1]
local found, reply = recall(memo)
if found then
  return reply
end
local v = redis.call('get', KEYS[1])
if v == false then
  return remember(memo, 0)
end
if tonumber(v) == nil then
  return redis.error_reply('ERR semaphore count is not an integer')
end
redis.call('set', KEYS[1], '0', 'keepttl')
return remember(memo, tonumber(v))
