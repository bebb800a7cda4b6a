-- Release one hold of a reentrant lock (rlock_wake.lua comes first).
-- KEYS[1] lock, KEYS[2] channel, KEYS[3] unlock latch of this request, KEYS[4] waiter records,
-- KEYS[5] clients, KEYS[6] wake channel prefix
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] publish command, ARGV[4] latch ttl ms,
-- ARGV[5] numsub command ('' to wake as Redisson does)
-- Returns the holds the owner keeps (0: released, a waiter was woken), or -1 when the owner held
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
local t = redis.call('time')
wake(KEYS[4], KEYS[5], KEYS[2], KEYS[6], t[1] * 1000 + math.floor(t[2] / 1000), ARGV[3], ARGV[5])
redis.call('set', KEYS[3], '1', 'px', ARGV[4])
return 0
