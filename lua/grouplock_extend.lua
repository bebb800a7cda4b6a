--! KEYS lock memo
--! ARGV owner lease rid tail
-- Extend one hold of a group lock (grouplock.lua and once.lua come first): when owner still names
-- every value of the tail, each expire_time becomes lease ms from now unless it has more left, and
-- the hash lives that long at least. Replies 1, or 0 when owner does not hold every value (nothing
-- is extended then). Exactly once by its memo, as lock_extend.lua says.
local memo = KEYS[2] .. ARGV[3]
local found, reply = recall(memo)
if found then
  return reply
end
local group, owner, ms = KEYS[1], ARGV[1], tonumber(ARGV[2])
local now = now_ms()
for j = 4, #ARGV do
  if not live_count(group, ARGV[j], owner, now) then
    return remember(memo, 0)
  end
end
local until_ms = now + ms
for j = 4, #ARGV do
  local ef = expire_field(ARGV[j], owner)
  if tonumber(redis.call('hget', group, ef)) < until_ms then
    redis.call('hset', group, ef, until_ms)
  end
end
lengthen(group, ms, 0)
return remember(memo, 1)
