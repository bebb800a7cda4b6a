--! KEYS lock counter waiters clients channel wake memo
--! ARGV field held rid lease publish numsub waits
-- Release one hold of a reentrant lock. Replies as core/lock.go says: the holds the owner keeps (0:
-- released, and a waiter woken or handed the lock), -1 when it held nothing.
--
-- The uncontended release is HGET, DEL, and a count of who listens on the lock's channel: its '0'
-- goes out to listeners only (Redisson's unlock message), and only a lock with waiter records runs
-- the hand-over (rlock_wake.lua), whose code is defined there alone.
--
-- When nobody listens, nobody waits: a release of a hold that had waited (waits '1') then removes
-- what waits leave beside the lock (its grant's mark, its Client's listing, a dead waiter's record),
-- so that a free lock leaves no key; other releases have none to remove but a gone waiter's, which
-- expire. A name that holds anything but a lock hash is refused (lockhash.lua, refuse.lua).
--
-- Exactly once (core/once.go): held is how many holds the client counts for the owner, and nothing
-- changes them until it has the answer. Only a release that finds another count keeps its answer
-- under the memo. Re-sent (MODE 1), it answers that, or finds by the count that the first send
-- released (held - 1 left, or none when held was 1), before it releases.
-- MODE 2 gives back an acquisition whose answer never came, under that acquisition's rid: held
-- counts it. It took effect if it kept a memo, or if the owner's count is the one it made; the memo
-- then says 'undone', so that a give-back sent again gives back nothing more.
if MODE == 1 then
  local done = redis.call('get', KEYS[7] .. ARGV[3])
  if done then return tonumber(done) end
end
local count = redis.pcall('hget', KEYS[1], ARGV[1])
if type(count) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1], nil, count.err)
end
count = tonumber(count)
if not count and redis.call('exists', KEYS[1]) == 1 then
  --! INCLUDE lockhash.lua
  local _, refused = hold_count(KEYS[1], ARGV[1])
  if refused then
    return refused
  end
end
if MODE == 2 then
  local m = redis.call('get', KEYS[7] .. ARGV[3])
  if m == 'undone' or (not m and count ~= tonumber(ARGV[2])) then
    return -3
  end
  redis.call('set', KEYS[7] .. ARGV[3], 'undone', 'px', 60000)
end
if not count then
  if MODE == 1 and ARGV[2] == '1' then return 0 end -- the first send released the last hold
  return -1
end
if MODE ~= 2 and count == tonumber(ARGV[2]) - 1 then
  return count -- the first send released it
end
if count > 1 then
  local held = tonumber(ARGV[2])
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[4]) then -- the holds left keep what they were promised
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  if count ~= held and MODE ~= 2 then
    redis.call('set', KEYS[7] .. ARGV[3], count - 1, 'px', 60000)
  end
  return count - 1
end
redis.call('del', KEYS[1])
-- Every waiter of ours listens on the lock's channel too: when nobody does, nobody waits. Where
-- subscriber counts cannot be trusted (numsub ''), every waiter is woken as Redisson does.
if ARGV[6] == '' then
  redis.call(ARGV[5], KEYS[5], '0')
  return 0
end
local listening = redis.call('pubsub', ARGV[6], KEYS[5])[2]
if listening > 0 then
  --! INCLUDE wake_records.lua rlock_wake.lua
  wake(ARGV[5], ARGV[6], listening)
elseif ARGV[7] == '1' then
  -- Record keys of another type are left alone.
  redis.pcall('zremrangebyrank', KEYS[3], 0, -1)
  redis.pcall('zremrangebyrank', KEYS[4], 0, -1)
end
return 0
