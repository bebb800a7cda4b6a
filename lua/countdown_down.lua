--! KEYS latch channel memo
--! ARGV publish rid
-- Count a latch down by one (Redisson's countDown); count.lua and once.lua come first. A missing
-- latch stays missing (count 0). Returns the count left. Reaching 0 deletes the key and publishes
-- '0' (open). A key that is not a latch (not a whole number above 0: a latch at 0 has no key) is
-- refused unchanged (refuse.lua): counting it down could delete someone else's data. Exactly once
-- by its memo: a count down sent again after a lost answer answers the first send's count.
local memo = KEYS[3] .. ARGV[2]
local found, reply = recall(memo)
if found then
  return reply
end
local n, refused = read_count(KEYS[1])
if refused then
  return refused
end
if not n then
  return remember(memo, 0)
end
if n < 1 then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1], 'latch')
end
local v = redis.call('decr', KEYS[1])
if v > 0 then
  return remember(memo, v)
end
redis.call('del', KEYS[1])
redis.call(ARGV[1], KEYS[2], '0')
return remember(memo, 0)
