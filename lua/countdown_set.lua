--! KEYS latch channel memo
--! ARGV count publish rid
-- Set a countdown latch's count, only if it is not set (Redisson's trySetCount); count.lua and
-- once.lua come first. Returns 1 when set (the channel got '1': closed), 0 when the latch already had
-- a count; exactly once by its memo. A key that is not a latch is refused, and left as it is.
local memo = KEYS[3] .. ARGV[3]
local found, reply = recall(memo)
if found then
  return reply
end
if redis.call('exists', KEYS[1]) == 1 then
  local n, refused = read_count(KEYS[1])
  if refused then
    return refused
  elseif n < 1 then
    --! INCLUDE refuse.lua
    return refuse(KEYS[1], 'latch')
  end
  return remember(memo, 0)
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], '1')
return remember(memo, 1)
