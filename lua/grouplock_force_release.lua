--! KEYS lock channel memo
--! ARGV rid publish tail
-- Release every value of the tail whoever holds it (grouplock.lua): each loses its three
-- fields, and Redisson's unlock message '0' goes out on the group's channel. Returns 1 if a value was
-- held by anyone; the answer is kept under the memo, which a re-sent request answers (MODE 1).
--! INCLUDE grouplock.lua once.lua
local lock, channel, memo = KEYS[1], KEYS[2], KEYS[3]
local rid, publish = ARGV[1], ARGV[2]
memo = memo .. rid
if MODE == 1 then
  local found, reply = recall(memo)
  if found then return reply end
end
local refused = foreign(lock)
if refused then
  return refused -- no lock lock: left as it is
end
local held = 0
for i = 3, #ARGV do
  local holder = redis.call('hget', lock, ARGV[i])
  if holder then
    redis.call('hdel', lock, ARGV[i], expire_field(ARGV[i], holder), count_field(ARGV[i], holder))
    held = 1
  end
end
redis.call(publish, channel, '0')
return remember(memo, held)
