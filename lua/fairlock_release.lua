-- Release one hold of a fair lock; the last release wakes the first waiter that is still there, or
-- hands it the lock (fairlock_wake.lua comes first).
-- KEYS[1] lock, KEYS[2] waiter queue, KEYS[3] waiter deadlines, KEYS[4] channel prefix,
-- KEYS[5] unlock latch of this request, KEYS[6] waiter records, KEYS[7] fencing counter
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] publish command, ARGV[4] latch ttl ms, ARGV[5] slot ms,
-- ARGV[6] numsub command ('' to wake as Redisson does)
-- Returns the holds the owner keeps (0: released, and the head waiter woken or given the lock), or -1
-- when the owner held nothing. The latch makes a re-sent request answer as the first did instead of
-- releasing twice.
local done = redis.call('get', KEYS[5])
if done then
  if done == '1' then return 0 end
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
  extend(KEYS[1], ARGV[1]) -- the holds left keep at least what they were promised
  redis.call('set', KEYS[5], '0', 'px', ARGV[4])
  return count
end
redis.call('del', KEYS[1])
redis.call('hdel', KEYS[6], ARGV[2]) -- the mark of the grant this hold may have come from
wake(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[7], tonumber(ARGV[5]), ARGV[3], ARGV[6])
redis.call('set', KEYS[5], '1', 'px', ARGV[4])
return 0
