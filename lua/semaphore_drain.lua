--! KEYS semaphore memo
--! ARGV rid
-- Take every available permit of a counting semaphore: set the count to 0 and return what it was (0
-- when the semaphore does not exist, which stays so). Nobody can proceed afterwards: nothing is
-- announced. Exactly once by its memo. A key that holds anything but a count is refused, and left as
-- it is.
--! INCLUDE count.lua once.lua answered.lua
local semaphore, memo = KEYS[1], KEYS[2]
local rid = ARGV[1]
memo = memo .. rid
local done, v = answered(memo, true, read_count, semaphore)
if done then return v end
if v then
  redis.call('set', semaphore, '0', 'keepttl')
end
return remember(memo, v or 0)
