-- Acquire a read hold of a read-write lock (Redisson's RReadWriteLock layout: a hash with 'mode',
-- one field per reader = its hold count, and one string per read hold that carries its own lease).
-- KEYS[1] lock, KEYS[2] waiting writers (ZSET, writer preference only), KEYS[3] this owner's lease
-- keys without the hold number (the order of rwlock_leases.lua)
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] the owner's write field, ARGV[4] '1' reentrant,
-- ARGV[5] '1' writer preference
-- Returns {1, count} when acquired; {0, ms} when the caller must wait, ms bounding the wait (unknown
-- when <= 0); {2} when the owner reads already and re-entry is not allowed.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- A hash without a mode is no read-write lock: never write into it.
  return {0, redis.call('pttl', KEYS[1])}
end
local mine = mode ~= false and redis.call('hexists', KEYS[1], ARGV[2]) == 1
local writer = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1
if mode == 'write' and not writer then
  return {0, redis.call('pttl', KEYS[1])}
end
if mine and ARGV[4] ~= '1' then
  return {2}
end
if ARGV[5] == '1' and not mine and not writer then
  -- A new reader lets a waiting writer go first; a reader already inside may re-enter.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  local last = redis.call('zrange', KEYS[2], -1, -1, 'withscores')
  if #last > 0 then
    return {0, math.max(redis.call('pttl', KEYS[1]), tonumber(last[2]) - now)}
  end
end
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[3] .. ':' .. count, 1, 'px', ARGV[1])
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
return {1, count}
