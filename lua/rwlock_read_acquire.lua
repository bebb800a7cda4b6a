--! KEYS lock writers leases memo
--! ARGV field held rid lease reentrant policy
-- Acquire a read hold of a read-write lock (Redisson's RReadWriteLock layout: a hash with 'mode',
-- one field per reader = its hold count, and one string per read hold that carries its own lease,
-- KEYS[3] .. field .. ':rwlock_timeout:' .. k). KEYS as rwlock_leases.lua says; replies as
-- core/lock.go says, exactly once as rlock_try.lua says. policy: '1' for writer preference. A name
-- that holds anything but a read-write lock, or waiting writers of another type, is refused before
-- anything is written (refuse.lua).
local lock, memo, held = KEYS[1], KEYS[4] .. ARGV[3], tonumber(ARGV[2])
if MODE == 1 then
  local m = redis.call('get', memo)
  if m then
    return {1, tonumber(m), 0}
  end
  local n = tonumber(redis.call('hget', lock, ARGV[1]))
  if n == held + 1 and redis.call('exists', KEYS[3] .. ARGV[1] .. ':rwlock_timeout:' .. n) == 1 then
    return {1, n, 0}
  end
end
local mode = redis.pcall('hget', lock, 'mode')
if type(mode) == 'table' or (mode and mode ~= 'read' and mode ~= 'write') or (not mode and redis.call('exists', lock) == 1) then
  -- No read-write lock (a key of another type, a hash without a mode): never write into it.
  --! INCLUDE refuse.lua
  return refuse(lock)
end
local count = mode ~= false and tonumber(redis.call('hget', lock, ARGV[1])) or 0
local writer = mode == 'write' and redis.call('hexists', lock, ARGV[1] .. ':write') == 1
if mode == 'write' and not writer then
  return {0, redis.call('pttl', lock)}
end
if MODE == 0 and count > 0 and count ~= held then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  local m = redis.call('get', memo)
  if m then
    return {1, tonumber(m), 0}
  end
  if count == held + 1 and redis.call('exists', KEYS[3] .. ARGV[1] .. ':rwlock_timeout:' .. count) == 1 then
    return {1, count, 0}
  end
end
if count > 0 and ARGV[5] ~= '1' then
  return {2}
end
if ARGV[6] == '1' and count == 0 and not writer then
  -- A new reader lets a waiting writer go first; a reader already inside may re-enter.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local failed = redis.pcall('zremrangebyscore', KEYS[2], '-inf', now)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[2], nil, failed.err)
  end
  local last = redis.call('zrange', KEYS[2], -1, -1, 'withscores')
  if #last > 0 then
    return {0, math.max(redis.call('pttl', lock), tonumber(last[2]) - now)}
  end
end
if mode == false then
  redis.call('hset', lock, 'mode', 'read')
end
local n = redis.call('hincrby', lock, ARGV[1], 1)
redis.call('set', KEYS[3] .. ARGV[1] .. ':rwlock_timeout:' .. n, 1, 'px', ARGV[4])
if redis.call('pttl', lock) < tonumber(ARGV[4]) then
  redis.call('pexpire', lock, ARGV[4])
end
if count ~= held then
  redis.call('set', memo, n, 'px', 60000)
end
return {1, n, 0}
