--! KEYS lock counter waiters clients channel wake memo
--! ARGV field held rid lease publish numsub waits
-- Release one hold of a reentrant lock. Replies as core/lock.go says: the holds the owner keeps (0:
-- released, and a waiter woken or handed the lock), -1 when it held nothing.
--
-- The uncontended release is HDEL, and a count of who listens on the lock's channel: its '0'
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
-- then says 'undone', so that a give-back sent again gives back nothing more (once.lua's undone).
--! INCLUDE once.lua release.lua
local lock, waiters, clients, channel, memo = KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[7]
local field, held, rid, lease, publish, numsub, waits = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
memo = memo .. rid
if MODE == 1 then
  local found, reply = recall(memo)
  if found then return reply end
end
local count, dropped
if held == 1 and MODE ~= 2 then
  -- The last hold, as the client counts, with no other call of the owner's on its way: its field
  -- goes at once, and the hash with its one field. No field to drop (count nil) is a first send
  -- that released already, or a hold that lapsed.
  dropped = redis.pcall('hdel', lock, field)
  if type(dropped) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(lock, nil, dropped.err)
  end
  dropped = dropped == 1
  count = dropped and 1 or nil
else
  count = redis.pcall('hget', lock, field)
  if type(count) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(lock, nil, count.err)
  end
  count = tonumber(count)
end
local answer = settled(memo, lock, count, held)
if answer then return answer end
if count > 1 then
  redis.call('hincrby', lock, field, -1)
  if redis.call('pttl', lock) < tonumber(lease) then -- the holds left keep what they were promised
    redis.call('pexpire', lock, lease)
  end
  if count ~= held then
    remember(memo, count - 1)
  end
  return count - 1
end
if not dropped then
  redis.call('del', lock)
end
-- Every waiter of ours listens on the lock's channel too: when nobody does, nobody waits. Where
-- subscriber counts cannot be trusted (numsub ''), every waiter is woken as Redisson does.
if numsub == '' then
  redis.call(publish, channel, '0')
  return 0
end
local listening = redis.call('pubsub', numsub, channel)[2]
if listening > 0 then
  --! INCLUDE wake_records.lua rlock_wake.lua
  wake(publish, numsub, listening)
elseif waits == '1' then
  -- Record keys of another type are left alone.
  redis.pcall('zremrangebyrank', waiters, 0, -1)
  redis.pcall('zremrangebyrank', clients, 0, -1)
end
return 0
