-- Release one hold of a reentrant lock.
-- KEYS[1] lock, KEYS[2] channel, KEYS[3] unlock latch of this request
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] publish command, ARGV[4] latch ttl ms
-- Returns the holds the owner keeps (0: released, the channel got '0'), or -1 when the owner held
-- nothing. The latch makes a re-sent request answer as the first did instead of releasing twice.
local done = redis.call('get', KEYS[3])
if done then
  if done == '1' then return 0 end
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[3], '0', 'px', ARGV[4])
  return count
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], '0')
redis.call('set', KEYS[3], '1', 'px', ARGV[4])
return 0
