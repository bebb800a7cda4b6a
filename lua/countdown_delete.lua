--! KEYS latch channel memo
--! ARGV publish rid
-- Delete a latch (count 0 again); count.lua and once.lua come first. Returns 1 when it existed; then
-- the channel gets '1', as Redisson's delete sends. Exactly once by its memo. A key that is not a
-- latch is refused, and left as it is.
local memo = KEYS[3] .. ARGV[2]
local found, reply = recall(memo)
if found then
  return reply
end
local n, refused = read_count(KEYS[1])
if refused then
  return refused
elseif n and n < 1 then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1], 'latch')
end
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '1')
  return remember(memo, 1)
end
return remember(memo, 0)
