--! KEYS semaphore memo
--! ARGV rid
-- Take every available permit of a counting semaphore: set the count to 0 and return what it was (0
-- when the semaphore does not exist, which stays so). Nobody can proceed afterwards: nothing is
-- announced. Exactly once by its memo. A key that holds anything but a count is refused, and left as
-- it is.
--! INCLUDE count.lua once.lua
local semaphore, memo = KEYS[1], KEYS[2]
local rid = ARGV[1]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
local v, refused = read_count(semaphore)
if refused then
  return refused
end
if not v then
  return remember(memo, 0)
end
redis.call('set', semaphore, '0', 'keepttl')
return remember(memo, v)
