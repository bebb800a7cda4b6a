--! KEYS lock channel memo
--! ARGV rid publish tail
-- Release every value of the tail whoever holds it (grouplock.lua comes first): each loses its three
-- fields, and Redisson's unlock message '0' goes out on the group's channel. Returns 1 if a value was
-- held by anyone; the answer is kept under the memo, which a re-sent request answers (MODE 1).
local group, memo = KEYS[1], KEYS[3] .. ARGV[1]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then
    return tonumber(done)
  end
end
local refused = foreign(group)
if refused then
  return refused -- no group lock: left as it is
end
local held = 0
for i = 3, #ARGV do
  local holder = redis.call('hget', group, ARGV[i])
  if holder then
    redis.call('hdel', group, ARGV[i], expire_field(ARGV[i], holder), count_field(ARGV[i], holder))
    held = 1
  end
end
redis.call(ARGV[2], KEYS[2], '0')
redis.call('set', memo, held, 'px', 60000)
return held
