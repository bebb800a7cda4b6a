-- Release one hold of a reentrant lock (rlock_wake.lua comes first, with the order of KEYS; KEYS[7]
-- is this request's unlock latch).
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] publish command, ARGV[4] latch ttl ms,
-- ARGV[5] numsub command ('' to wake as Redisson does)
-- Returns the holds the owner keeps (0: released, and a waiter woken or given the lock), or -1 when
-- the owner held nothing. The latch makes a re-sent request answer as the first did instead of
-- releasing twice.
local done = redis.call('get', KEYS[7])
if done then
  if done == '1' then return 0 end
  return 1
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not count then
  return -1
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], -1)
  extend(KEYS[1], ARGV[1]) -- the holds left keep at least what they were promised
  redis.call('set', KEYS[7], '0', 'px', ARGV[4])
  return count - 1
end
redis.call('del', KEYS[1])
wake(ARGV[3], ARGV[5])
redis.call('set', KEYS[7], '1', 'px', ARGV[4])
return 0
