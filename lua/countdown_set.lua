--! KEYS latch channel memo
--! ARGV count publish rid
-- Set a countdown latch's count, only if it is not set (Redisson's trySetCount). Returns 1 when set
-- (the channel got '1': closed), 0 when the latch already had a count; exactly once by its memo. A
-- key that is not a latch is refused, and left as it is.
--! INCLUDE count.lua once.lua answered.lua
local latch, channel, memo = KEYS[1], KEYS[2], KEYS[3]
local count, publish, rid = ARGV[1], ARGV[2], ARGV[3]
memo = memo .. rid
local done, n = answered(memo, true, read_latch, latch)
if done then return n end
if n then
  return remember(memo, 0)
end
redis.call('set', latch, count)
redis.call(publish, channel, '1')
return remember(memo, 1)
