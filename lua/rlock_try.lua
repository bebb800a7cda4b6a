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
--! INCLUDE once.lua
local lock, counter, waiters, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, held, rid, lease, reentrant, fenced = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]
memo = memo .. rid
if MODE == 1 then
  --! INCLUDE acquired.lua
  local found, reply = acquired(memo, held, lock, field, nil, fenced == '1' and counter)
  if found then return reply end
end
-- Free, with no waiter recorded and no Java waiter's turn (whose mark is among the records): the
-- acquisition is Redisson's own, and replies the count alone when it takes no token.
local free = redis.call('exists', lock, waiters) == 0
local ttl, count = -2, 0
if not free then
  ttl = redis.call('pttl', lock)
  if ttl ~= -2 then
    --! INCLUDE lockhash.lua
    local refused
    count, refused = hold_count(lock, field)
    if refused then return refused end
  end
  if MODE == 0 and count > 0 and count ~= held then
    -- Not the count the client expects: a send of this call made again after a connection failure
    -- may have run first (this one was held up on the failed connection). It answers as that did.
    --! INCLUDE acquired.lua
    local found, reply = acquired(memo, held, lock, field, count, fenced == '1' and counter)
    if found then return reply end
  end
  if ttl == -2 then
    -- A release left the free lock to a Java waiter for a moment (rlock_wake.lua): wait till it ends.
    local turn = redis.pcall('zscore', waiters, '~java')
    if type(turn) == 'table' then
      --! INCLUDE refuse.lua
      return refuse(waiters, nil, turn.err)
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
  elseif reentrant ~= '1' then
    return {2}
  end
end
local tok, refused = 0
if fenced == '1' then
  --! INCLUDE token.lua
  tok, refused = take_token(counter, fenced)
  if refused then return refused end
end
local n = 1
if free then
  redis.call('hset', lock, field, 1)
  redis.call('pexpire', lock, lease)
  if fenced ~= '1' and held == 0 then
    return 1
  end
else
  n = redis.call('hincrby', lock, field, 1)
  -- A re-entry never shortens what an outer hold was promised (a new hash has no TTL: -2 < lease).
  if ttl < tonumber(lease) then
    redis.call('pexpire', lock, lease)
  end
end
if count ~= held then
  remember(memo, {1, n, tok})
end
return {1, n, tok}
