--! KEYS latch channel memo
--! ARGV publish rid
-- Delete a latch (count 0 again). Returns 1 when it existed; then the channel gets '1', as Redisson's
-- delete sends. Exactly once by its memo. A key that is not a latch is refused, and left as it is.
--! INCLUDE count.lua once.lua answered.lua
local latch, channel, memo = KEYS[1], KEYS[2], KEYS[3]
local publish, rid = ARGV[1], ARGV[2]
memo = memo .. rid
local done, reply = answered(memo, true, read_latch, latch)
if done then return reply end
if redis.call('del', latch) == 1 then
  redis.call(publish, channel, '1')
  return remember(memo, 1)
end
return remember(memo, 0)
