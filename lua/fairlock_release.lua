-- Release one hold of a fair lock; the last release wakes the first waiter that is still there, or
-- hands it the lock (fairlock_wake.lua comes first).
-- KEYS as fairlock_wake.lua says; KEYS[7] is this request's unlock latch.
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] publish command, ARGV[4] latch ttl ms, ARGV[5] slot ms,
-- ARGV[6] numsub command ('' to wake as Redisson does), ARGV[7] the holds the client counts
-- ('0': unknown), ARGV[8] '1' when this request was sent before (a network error hid the answer)
-- Returns the holds the owner keeps (0: released, and the head waiter woken or given the lock), -1
-- when the owner held nothing, or -2 when a re-sent request finds nothing held. A re-sent request
-- never releases twice, as rlock_release.lua explains.
local resent, held = ARGV[8] == '1', tonumber(ARGV[7])
if resent then
  local done = redis.call('get', KEYS[7])
  if done then return tonumber(done) end
end
local before = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not before then
  if resent then return -2 end
  return -1
end
if resent and before == held - 1 then
  return before -- the first send released it
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
  extend(KEYS[1], ARGV[1]) -- the holds left keep at least what they were promised
  if before ~= held then
    redis.call('set', KEYS[7], count, 'px', ARGV[4])
  end
  return count
end
redis.call('del', KEYS[1])
redis.call('hdel', KEYS[6], ARGV[2]) -- the mark of the grant this hold may have come from
wake(tonumber(ARGV[5]), ARGV[3], ARGV[6])
return 0
