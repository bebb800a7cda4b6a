--! KEYS lock counter waiters clients memo
--! ARGV field held rid lease reentrant fenced window client linger tag
-- A try of an acquisition of a reentrant lock whose waiter listens: when it does not acquire, it
-- records the waiter (record.lua, defined only where it is called; see rlock_wake.lua), which a
-- release may then hand the lock to. Replies as core/lock.go says ({0, pttl, score}: recorded with that score), exactly
-- once as rlock_try.lua says.
-- window: ms within which the waiter tries again ('0': no record); client: this client's id; linger:
-- ms the client listens after its last waiter left ('': it listed itself recently enough); tag: the
-- waiter's record. Any try of the wait may have recorded the waiter, this one's other send included
-- (its answer lost, or this a first send that the network held up): a try that acquires removes the
-- record, or a release would hand the lock to the waiter that already holds it.
--
-- A name that holds anything but a lock hash, or a side key of another type, is refused before the
-- lock or a record is written (lockhash.lua, refuse.lua): the writes that can fail on a side key (the
-- fencing increment, removing the waiter's record) go before the lock's own.
--! INCLUDE once.lua
local lock, counter, waiters, clients, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local field, held, rid, lease, reentrant, fenced = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local window, client, linger, tag = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
memo = memo .. rid
if MODE == 1 then
  --! INCLUDE acquired.lua
  local found, reply = acquired(memo, held, lock, field, nil, fenced == '1' and counter, waiters, tag)
  if found then return reply end
end
local ttl = redis.call('pttl', lock)
local free = ttl == -2
local count = 0
if not free then
  --! INCLUDE lockhash.lua
  local refused
  count, refused = hold_count(lock, field)
  if refused then return refused end
end
local turn = false
if free then
  turn = redis.pcall('zscore', waiters, '~java')
  if type(turn) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(waiters, nil, turn.err)
  end
  turn = tonumber(turn)
end
if turn then
  -- A release left the free lock to a Java waiter for a moment (rlock_wake.lua): wait till it ends.
  local t = redis.call('time')
  local left = math.ceil((turn - (t[1] * 1000000 + t[2])) / 1000)
  if left > 0 then
    if window ~= '0' then
      --! INCLUDE record.lua
      local score, refused = record(waiters, clients, tag, window, client, linger, lease)
      return refused or {0, left, score}
    end
    return {0, left}
  end
end
if count > 0 and tag ~= '' then
  -- A release may have handed the lock to this waiter (rlock_wake.lua): the grant is this
  -- acquisition, and its lease starts again now, since the waiter counts it from this try.
  local mark = redis.pcall('zscore', waiters, tag)
  if type(mark) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(waiters, nil, mark.err)
  end
  mark = tonumber(mark)
  if mark and mark <= 0 then
    redis.call('zrem', waiters, tag)
    if ttl < lease then
      redis.call('pexpire', lock, lease)
    end
    if count ~= held + 1 then
      remember(memo, {1, count, -mark})
    end
    return {1, count, -mark}
  end
end
if MODE == 0 and count > 0 and count ~= held then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  --! INCLUDE acquired.lua
  local found, reply = acquired(memo, held, lock, field, count, fenced == '1' and counter, waiters, tag)
  if found then return reply end
end
if free or count > 0 then
  if count > 0 and reentrant ~= '1' then
    return {2}
  end
  --! INCLUDE token.lua
  local token, refused = take_token(counter, fenced)
  if refused then return refused end
  local failed = tag ~= '' and redis.pcall('zrem', waiters, tag)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(waiters, nil, failed.err)
  end
  local n = redis.call('hincrby', lock, field, 1)
  -- A re-entry never shortens what an outer hold was promised (a new hash has no TTL: -2 < lease).
  if ttl < lease then
    redis.call('pexpire', lock, lease)
  end
  if count ~= held then
    remember(memo, {1, n, token})
  end
  return {1, n, token}
end
if window ~= '0' then
  --! INCLUDE record.lua
  local score, refused = record(waiters, clients, tag, window, client, linger, lease)
  return refused or {0, ttl, score}
end
return {0, ttl}
