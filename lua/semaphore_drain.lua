--! KEYS semaphore memo
--! ARGV rid
-- Take every available permit of a counting semaphore: set the count to 0 and return what it was (0
-- when the semaphore does not exist, which stays so). Nobody can proceed afterwards: nothing is
-- announced. count.lua and once.lua come first: exactly once by its memo. A key that holds anything
-- but a count is refused, and left as it is.
local memo = KEYS[2] .. ARGV[1]
local found, reply = recall(memo)
if found then
  return reply
end
local v, refused = read_count(KEYS[1])
if refused then
  return refused
end
if not v then
  return remember(memo, 0)
end
redis.call('set', KEYS[1], '0', 'keepttl')
return remember(memo, v)
