--! KEYS lock memo
--! ARGV owner lease rid tail
-- Extend one hold of a group lock (grouplock.lua): when owner still names
-- every value of the tail, each expire_time becomes lease ms from now unless it has more left, and
-- the hash lives that long at least. Replies 1, or 0 when owner does not hold every value (nothing
-- is extended then), or the refusal of a group that holds no group lock (foreign), before anything is
-- written. Exactly once by its memo, as hold_extend.lua says.
--! INCLUDE grouplock.lua once.lua
local lock, memo = KEYS[1], KEYS[2]
local owner, lease, rid = ARGV[1], tonumber(ARGV[2]), ARGV[3]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
local now = now_ms()
for j = 4, #ARGV do
  if not live_count(lock, ARGV[j], owner, now) then
    local refused = foreign(lock)
    if refused then
      return refused
    end
    return remember(memo, 0)
  end
end
local until_ms = now + lease
for j = 4, #ARGV do
  local ef = expire_field(ARGV[j], owner)
  if tonumber(redis.call('hget', lock, ef)) < until_ms then
    redis.call('hset', lock, ef, until_ms)
  end
end
lengthen(lock, lease, 0)
return remember(memo, 1)
