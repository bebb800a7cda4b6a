--! KEYS latch channel memo
--! ARGV publish rid
-- Delete a latch (count 0 again); once.lua comes first. Returns 1 when it existed; then the channel
-- gets '1', as Redisson's delete sends. Exactly once by its memo.
local memo = KEYS[3] .. ARGV[2]
local found, reply = recall(memo)
if found then
  return reply
end
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '1')
  return remember(memo, 1)
end
return remember(memo, 0)
