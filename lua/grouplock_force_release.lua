--! KEYS lock channel memo
--! ARGV rid publish tail
-- Release every value of the tail whoever holds it (grouplock.lua): each loses its three
-- fields, and Redisson's unlock message '0' goes out on the group's channel. Returns 1 if a value was
-- held by anyone; the answer is kept under the memo, which a re-sent request answers (MODE 1). A
-- name that holds no group lock is refused, and left as it is.
--! INCLUDE grouplock.lua once.lua answered.lua
local lock, channel, memo = KEYS[1], KEYS[2], KEYS[3]
local rid, publish = ARGV[1], ARGV[2]
memo = memo .. rid
local done, reply = answered(memo, MODE == 1, function() return nil, foreign(lock) end)
if done then return reply end
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
