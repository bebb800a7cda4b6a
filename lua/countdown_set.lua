-- Set a countdown latch's count, only if it is not set (Redisson's trySetCount).
-- KEYS[1] latch, KEYS[2] channel; ARGV[1] count, ARGV[2] publish command.
-- Returns 1 when set (the channel got '1': closed), 0 when the latch already had a count.
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], '1')
return 1
