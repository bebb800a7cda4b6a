--! KEYS lock counter waiters clients channel wake memo
--! ARGV field held rid lease publish numsub
-- Release one hold of a reentrant lock (wake_records.lua and rlock_wake.lua come first, with the
-- order of KEYS). Replies as core/lock.go says: the holds the owner keeps (0: released, and a waiter
-- woken or handed the lock), -1 when it held nothing.
--
-- Exactly once (core/once.go): held is how many holds the client counts for the owner, and nothing
-- changes them until it has the answer. Only a release that finds another count keeps its answer
-- under the memo. Re-sent (MODE 1), it answers that, or finds by the count that the first send
-- released (held - 1 left, or none when held was 1), before it releases.
-- MODE 2 gives back an acquisition whose answer never came, under that acquisition's rid: held
-- counts it. It took effect if it kept a memo, or if the owner's count is the one it made; the memo
-- then says 'undone', so that a give-back sent again gives back nothing more.
local held, memo = tonumber(ARGV[2]), KEYS[7] .. ARGV[3]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if MODE == 2 then
  local m = redis.call('get', memo)
  if m == 'undone' or (not m and count ~= held) then
    return -3
  end
  redis.call('set', memo, 'undone', 'px', 60000)
end
if not count then
  if MODE == 1 and held == 1 then return 0 end -- the first send released the last hold
  return -1
end
if MODE == 1 and count == held - 1 then
  return count -- the first send released it
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[4]) then -- the holds left keep what they were promised
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  if count ~= held and MODE ~= 2 then
    redis.call('set', memo, count - 1, 'px', 60000)
  end
  return count - 1
end
redis.call('del', KEYS[1])
wake(ARGV[5], ARGV[6])
return 0
