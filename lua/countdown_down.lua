--! KEYS latch channel memo
--! ARGV publish rid
-- Count a latch down by one (Redisson's countDown). A missing latch stays missing (count 0). Returns
-- the count left. Reaching 0 deletes the key and publishes '0' (open). A key that is not a latch (not
-- a whole number above 0: a latch at 0 has no key) is refused unchanged (refuse.lua): counting it
-- down could delete someone else's data. Exactly once by its memo: a count down sent again after a
-- lost answer answers the first send's count.
--! INCLUDE count.lua once.lua answered.lua
local latch, channel, memo = KEYS[1], KEYS[2], KEYS[3]
local publish, rid = ARGV[1], ARGV[2]
memo = memo .. rid
local done, n = answered(memo, true, read_latch, latch)
if done then return n end
if not n then
  return remember(memo, 0)
end
local v = redis.call('decr', latch)
if v > 0 then
  return remember(memo, v)
end
redis.call('del', latch)
redis.call(publish, channel, '0')
return remember(memo, 0)
