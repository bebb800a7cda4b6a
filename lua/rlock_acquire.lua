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
local held = tonumber(ARGV[2])
if MODE == 1 then
  local m = redis.call('get', KEYS[5] .. ARGV[3])
  if m then
    local n, t = string.match(m, '^(%d+) (%d+)$')
    return {1, tonumber(n), tonumber(t)}
  end
  local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
  if n == held + 1 then
    redis.call('zrem', KEYS[3], ARGV[10])
    return {1, n, ARGV[6] == '1' and tonumber(redis.call('get', KEYS[2])) or 0}
  end
end
local ttl = redis.call('pttl', KEYS[1])
local free = ttl == -2
local count = 0
if not free then
  --! INCLUDE lockhash.lua
  local refused
  count, refused = hold_count(KEYS[1], ARGV[1])
  if refused then
    return refused
  end
end
local lease = tonumber(ARGV[4])
local turn = false
if free then
  turn = redis.pcall('zscore', KEYS[3], '~java')
  if type(turn) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[3], nil, turn.err)
  end
  turn = tonumber(turn)
end
if turn then
  -- A release left the free lock to a Java waiter for a moment (rlock_wake.lua): wait till it ends.
  local t = redis.call('time')
  local left = math.ceil((turn - (t[1] * 1000000 + t[2])) / 1000)
  if left > 0 then
    if ARGV[7] ~= '0' then
      --! INCLUDE record.lua
      local score, refused = record(KEYS[3], KEYS[4], ARGV[10], ARGV[7], ARGV[8], ARGV[9], ARGV[4])
      return refused or {0, left, score}
    end
    return {0, left}
  end
end
if count > 0 and ARGV[10] ~= '' then
  -- A release may have handed the lock to this waiter (rlock_wake.lua): the grant is this
  -- acquisition, and its lease starts again now, since the waiter counts it from this try.
  local mark = redis.pcall('zscore', KEYS[3], ARGV[10])
  if type(mark) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[3], nil, mark.err)
  end
  mark = tonumber(mark)
  if mark and mark <= 0 then
    redis.call('zrem', KEYS[3], ARGV[10])
    if ttl < lease then
      redis.call('pexpire', KEYS[1], lease)
    end
    if count ~= held + 1 then
      redis.call('set', KEYS[5] .. ARGV[3], count .. ' ' .. -mark, 'px', 60000)
    end
    return {1, count, -mark}
  end
end
if MODE == 0 and count > 0 and count ~= held then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  local m = redis.call('get', KEYS[5] .. ARGV[3])
  if m then
    local n, t = string.match(m, '^(%d+) (%d+)$')
    return {1, tonumber(n), tonumber(t)}
  end
  if count == held + 1 then
    redis.call('zrem', KEYS[3], ARGV[10])
    return {1, count, ARGV[6] == '1' and tonumber(redis.call('get', KEYS[2])) or 0}
  end
end
if free or count > 0 then
  if count > 0 and ARGV[5] ~= '1' then
    return {2}
  end
  local token = 0
  if ARGV[6] == '1' then
    --! INCLUDE token.lua
    local err
    token, err = next_token(KEYS[2])
    if err then
      --! INCLUDE refuse.lua
      return refuse(KEYS[2], nil, err)
    end
  end
  local failed = ARGV[10] ~= '' and redis.pcall('zrem', KEYS[3], ARGV[10])
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[3], nil, failed.err)
  end
  local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
  -- A re-entry never shortens what an outer hold was promised (a new hash has no TTL: -2 < lease).
  if ttl < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  if count ~= held then
    redis.call('set', KEYS[5] .. ARGV[3], n .. ' ' .. token, 'px', 60000)
  end
  return {1, n, token}
end
if ARGV[7] ~= '0' then
  --! INCLUDE record.lua
  local score, refused = record(KEYS[3], KEYS[4], ARGV[10], ARGV[7], ARGV[8], ARGV[9], ARGV[4])
  return refused or {0, ttl, score}
end
return {0, ttl}
