-- Release one hold of a reentrant lock (rlock_wake.lua comes first, with the order of KEYS; KEYS[7]
-- is this request's unlock latch).
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] publish command, ARGV[4] latch ttl ms,
-- ARGV[5] numsub command ('' to wake as Redisson does), ARGV[6] the holds the client counts for
-- the owner, sure that nothing else changes them until it has the answer ('0': unknown),
-- ARGV[7] '1' when this request was sent before (a network error hid the answer)
-- Returns the holds the owner keeps (0: released, and a waiter woken or given the lock), -1 when
-- the owner held nothing, or -2 when a re-sent request finds nothing held (see below).
--
-- A re-sent request must not release twice. The client says how many holds it counts (held), and
-- nothing changes them while the release is unanswered (it sends no acquisition of the owner
-- meanwhile, and releases one hold at a time): a re-sent request that finds held - 1 was released by
-- the first send, and one that finds the field gone answers -2 (the first send may have released
-- it, or the hold may have lapsed before: the client, which knows whether it still counted the hold
-- as held, decides). Only a release that found another count than held (an abandoned or unanswered
-- acquisition, or held unknown) and leaves holds writes the latch, its answer, which the client
-- deletes once it has it: a re-sent request finds it there. A release leaves no key behind.
local resent, held = ARGV[7] == '1', tonumber(ARGV[6])
if resent then
  local done = redis.call('get', KEYS[7])
  if done then return tonumber(done) end
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not count then
  if resent then return -2 end
  return -1
end
if resent and count == held - 1 then
  return count -- the first send released it
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], -1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then -- the holds left keep what they were promised
    redis.call('pexpire', KEYS[1], ARGV[1])
  end
  if count ~= held then
    redis.call('set', KEYS[7], count - 1, 'px', ARGV[4])
  end
  return count - 1
end
redis.call('del', KEYS[1])
wake(ARGV[3], ARGV[5])
return 0
