-- Count a latch down by one (Redisson's countDown). A missing latch stays missing (count 0).
-- KEYS[1] latch, KEYS[2] channel; ARGV[1] publish command.
-- Returns the count left. Reaching 0 deletes the key and publishes '0' (open).
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local v = redis.call('decr', KEYS[1])
if v > 0 then
  return v
end
redis.call('del', KEYS[1])
if v == 0 then
  redis.call(ARGV[1], KEYS[2], '0')
end
return 0
