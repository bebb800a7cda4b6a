-- Release one hold of a reentrant lock (rlock_wake.lua comes first, with the order of KEYS; KEYS[7]
-- is this request's unlock latch).
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] publish command, ARGV[4] latch ttl ms,
-- ARGV[5] numsub command ('' to wake as Redisson does), ARGV[6] '1' when this request was sent
-- before (a network error hid the answer)
-- Returns the holds the owner keeps (0: released, and a waiter woken or given the lock), -1 when
-- the owner held nothing, or -2 when a re-sent request finds nothing held (see below).
--
-- A re-sent request must not release twice. Only a release that leaves holds writes the latch (the
-- answer, which the client deletes once it has it): a re-sent request finds it there. A last release
-- leaves nothing: a re-sent one that finds the owner's field gone answers -2, since the first send
-- may have released it or the hold may have lapsed before; the client, which knows whether the hold
-- was still held by its account, decides. It sends no acquisition of the owner while its release is
-- unanswered, so the field cannot be a new hold's.
local resent = ARGV[6] == '1'
if resent then
  local done = redis.call('get', KEYS[7])
  if done then return tonumber(done) end
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not count then
  if resent then return -2 end
  return -1
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], -1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then -- the holds left keep what they were promised
    redis.call('pexpire', KEYS[1], ARGV[1])
  end
  redis.call('set', KEYS[7], count - 1, 'px', ARGV[4])
  return count - 1
end
redis.call('del', KEYS[1])
wake(ARGV[3], ARGV[5])
return 0
