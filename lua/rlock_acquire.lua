-- Acquire a reentrant lock (Redisson's layout: a hash, field = owner, value = hold count).
-- KEYS[1] lock, KEYS[2] fencing counter, KEYS[3] waiter records, KEYS[4] clients (rlock_wake.lua;
-- wake_records.lua comes first)
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] '1' reentrant, ARGV[4] '1' fenced,
-- ARGV[5] ms within which this waiter will try again ('0': it will not wait, record nothing),
-- ARGV[6] client id, ARGV[7] ms for which the client listens after its last waiter left ('': not
-- listed again, see record),
-- ARGV[8] '1' when an earlier try of this wait recorded the waiter, ARGV[9] the waiter's record
-- (its score: the time in microseconds by which it will have tried again)
-- A try that records nothing (ARGV[5] '0') and follows no recording try sends ARGV[1..5] and
-- KEYS[1..3] only (the waiter records hold a Java waiter's turn: rlock_wake.lua).
-- Returns {1, count, token} when acquired, {0, pttl} when another owner holds it ({0, pttl, score}
-- when the waiter was recorded, score being its record's new score), {2} when the owner holds it
-- already and re-entry is not allowed.
-- One PTTL says whether the lock is free (-2), how long it has left, and what a failed try answers.
local ttl = redis.call('pttl', KEYS[1])
local free = ttl == -2
local mine = not free and redis.call('hexists', KEYS[1], ARGV[2]) == 1
local lease = tonumber(ARGV[1])
local turn = free and tonumber(redis.call('zscore', KEYS[3], '~java'))
if turn then
  -- A release left the free lock to a Java waiter for a moment (rlock_wake.lua): wait till it ends.
  local t = redis.call('time')
  local left = math.ceil((turn - (t[1] * 1000000 + t[2])) / 1000)
  if left > 0 then
    if ARGV[5] ~= '0' then
      return {0, left, record(KEYS[3], KEYS[4], ARGV[9], ARGV[5], ARGV[6], ARGV[7])}
    end
    return {0, left}
  end
end
if mine and ARGV[8] == '1' then
  -- A release may have handed the lock to this waiter (rlock_wake.lua): the grant is this
  -- acquisition.
  -- Its lease starts again now: the waiter counts it from this try.
  local mark = tonumber(redis.call('zscore', KEYS[3], ARGV[9]))
  if mark and mark <= 0 then
    redis.call('zrem', KEYS[3], ARGV[9])
    if ttl < lease then
      redis.call('pexpire', KEYS[1], lease)
    end
    return {1, tonumber(redis.call('hget', KEYS[1], ARGV[2])), -mark}
  end
end
if free or mine then
  if mine and ARGV[3] ~= '1' then
    return {2}
  end
  local count = 1
  if free then
    redis.call('hset', KEYS[1], ARGV[2], 1)
  else
    count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  end
  -- A re-entry never shortens what an outer hold was promised (a new hash has no TTL: -2 < lease).
  if ttl < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  local token = 0
  if ARGV[4] == '1' then
    token = redis.call('incr', KEYS[2])
  end
  if ARGV[8] == '1' then
    redis.call('zrem', KEYS[3], ARGV[9])
  end
  return {1, count, token}
end
if ARGV[5] ~= '0' then
  local score = record(KEYS[3], KEYS[4], ARGV[9], ARGV[5], ARGV[6], ARGV[7])
  return {0, ttl, score}
end
return {0, ttl}
