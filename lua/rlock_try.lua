--! KEYS lock counter waiters memo
--! ARGV field held rid lease reentrant fenced
-- The first try of an acquisition of a reentrant lock, before its waiter listens: it records no
-- waiter (Redisson's layout: a hash, field = owner, value = hold count; the acquisition replies of
-- core/lock.go). wake_records.lua is not needed.
--
-- Exactly once (core/once.go): held is how many holds the client counts for the owner, and nothing
-- changes them until it has the answer. A send that finds another count (a hold that lapsed, or one
-- the client lost track of) keeps its answer under the memo; re-sent (MODE 1), the try answers
-- that, or finds its own acquisition by the count it made, before it tries anew.
--
-- A name that holds anything but a lock hash, or a side key of another type, is refused before
-- anything is written (lockhash.lua, refuse.lua): the fencing increment, which can fail on a counter
-- that is not one, goes before the lock's own writes.
if MODE == 1 then
  local m = redis.call('get', KEYS[4] .. ARGV[3])
  if m then
    local n, t = string.match(m, '^(%d+) (%d+)$')
    return {1, tonumber(n), tonumber(t)}
  end
  local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
  if n == tonumber(ARGV[2]) + 1 then
    return {1, n, ARGV[6] == '1' and tonumber(redis.call('get', KEYS[2])) or 0}
  end
end
if redis.call('exists', KEYS[1], KEYS[3]) == 0 then
  -- Free, with no waiter recorded and no Java waiter's turn (whose mark is among the records): the
  -- acquisition is Redisson's own, and replies the count alone when it takes no token.
  local tok = 0
  if ARGV[6] == '1' then
    --! INCLUDE token.lua
    local err
    tok, err = next_token(KEYS[2])
    if err then
      --! INCLUDE refuse.lua
      return refuse(KEYS[2], nil, err)
    end
  end
  redis.call('hset', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[4])
  if ARGV[6] ~= '1' and ARGV[2] == '0' then
    return 1
  end
  if ARGV[2] ~= '0' then
    redis.call('set', KEYS[4] .. ARGV[3], '1 ' .. tok, 'px', 60000)
  end
  return {1, 1, tok}
end
local ttl = redis.call('pttl', KEYS[1])
local count = 0
if ttl ~= -2 then
  --! INCLUDE lockhash.lua
  local refused
  count, refused = hold_count(KEYS[1], ARGV[1])
  if refused then
    return refused
  end
end
if MODE == 0 and count > 0 and count ~= tonumber(ARGV[2]) then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  local m = redis.call('get', KEYS[4] .. ARGV[3])
  if m then
    local n, t = string.match(m, '^(%d+) (%d+)$')
    return {1, tonumber(n), tonumber(t)}
  end
  if count == tonumber(ARGV[2]) + 1 then
    return {1, count, ARGV[6] == '1' and tonumber(redis.call('get', KEYS[2])) or 0}
  end
end
if ttl == -2 then
  -- A release left the free lock to a Java waiter for a moment (rlock_wake.lua): wait till it ends.
  local turn = redis.pcall('zscore', KEYS[3], '~java')
  if type(turn) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[3], nil, turn.err)
  end
  turn = tonumber(turn)
  if turn then
    local t = redis.call('time')
    local left = math.ceil((turn - (t[1] * 1000000 + t[2])) / 1000)
    if left > 0 then
      return {0, left}
    end
  end
elseif count == 0 then
  return {0, ttl}
elseif ARGV[5] ~= '1' then
  return {2}
end
local tok = 0
if ARGV[6] == '1' then
  --! INCLUDE token.lua
  local err
  tok, err = next_token(KEYS[2])
  if err then
    --! INCLUDE refuse.lua
    return refuse(KEYS[2], nil, err)
  end
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
-- A re-entry never shortens what an outer hold was promised (a new hash has no TTL: -2 < lease).
if ttl < tonumber(ARGV[4]) then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
if count ~= tonumber(ARGV[2]) then
  redis.call('set', KEYS[4] .. ARGV[3], n .. ' ' .. tok, 'px', 60000)
end
return {1, n, tok}
