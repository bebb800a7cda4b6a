--! KEYS lock writers leases memo
--! ARGV field held rid lease reentrant policy
-- Acquire a read hold of a read-write lock (Redisson's RReadWriteLock layout: a hash with 'mode',
-- one field per reader = its hold count, and one string per read hold that carries its own lease,
-- leases .. field .. ':rwlock_timeout:' .. k). KEYS as rwlock_leases.lua says; replies as
-- core/lock.go says, exactly once as rlock_try.lua says. policy: '1' for writer preference. A name
-- that holds anything but a read-write lock, or waiting writers of another type, is refused before
-- anything is written (rwlock_mode.lua, and refuse.lua).
--! INCLUDE rwlock_mode.lua once.lua
local lock, writers, leases, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, held, rid, lease, reentrant, policy = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]
memo = memo .. rid
local timeout = leases .. field .. ':rwlock_timeout:'
if MODE == 1 then
  local found, reply = recall(memo)
  if found then return reply end
  local n = tonumber(redis.call('hget', lock, field))
  if n == held + 1 and redis.call('exists', timeout .. n) == 1 then
    return {1, n, 0}
  end
end
local mode, refused = rwlock_mode(lock)
if refused then
  return refused -- no read-write lock: never write into it
end
local count = mode ~= false and tonumber(redis.call('hget', lock, field)) or 0
local writer = mode == 'write' and redis.call('hexists', lock, field .. ':write') == 1
if mode == 'write' and not writer then
  return {0, redis.call('pttl', lock)}
end
if MODE == 0 and count > 0 and count ~= held then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  local found, reply = recall(memo)
  if found then return reply end
  if count == held + 1 and redis.call('exists', timeout .. count) == 1 then
    return {1, count, 0}
  end
end
if count > 0 and reentrant ~= '1' then
  return {2}
end
if policy == '1' and count == 0 and not writer then
  -- A new reader lets a waiting writer go first; a reader already inside may re-enter.
  --! INCLUDE expired.lua
  local now, refused = drop_expired(writers)
  if refused then return refused end
  local last = redis.call('zrange', writers, -1, -1, 'withscores')
  if #last > 0 then
    return {0, math.max(redis.call('pttl', lock), tonumber(last[2]) - now)}
  end
end
if mode == false then
  redis.call('hset', lock, 'mode', 'read')
end
local n = redis.call('hincrby', lock, field, 1)
redis.call('set', timeout .. n, 1, 'px', lease)
if redis.call('pttl', lock) < tonumber(lease) then
  redis.call('pexpire', lock, lease)
end
if count ~= held then
  remember(memo, {1, n, 0})
end
return {1, n, 0}
