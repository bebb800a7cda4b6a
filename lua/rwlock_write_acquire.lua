--! KEYS lock writers memo
--! ARGV field owner held rid lease reentrant policy waits
-- Acquire the write hold of a read-write lock (Redisson's layout: field 'OWNER:write' = hold count).
-- Replies as core/lock.go says ({3}: the owner reads, and a read hold is never upgraded, since
-- waiting for the other readers could wait for ever), exactly once as rlock_try.lua says.
-- policy: how long a waiting writer keeps new readers out, ms ('0': no writer preference); waits:
-- '1' when this acquisition waits (a single try keeps nobody out). A name that holds anything but a
-- read-write lock, or waiting writers of another type, is refused before anything is written
-- (rwlock_mode.lua, and refuse.lua).
--! INCLUDE rwlock_mode.lua once.lua
local lock, writers, memo = KEYS[1], KEYS[2], KEYS[3]
local field, owner, held, rid, lease, reentrant, policy, waits = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
memo = memo .. rid
if MODE == 1 then
  --! INCLUDE acquired.lua
  local found, reply = acquired(memo, held, lock, field, nil, false)
  if found then return reply end
end
local mode, refused = rwlock_mode(lock)
if refused then return refused end -- no read-write lock: never write into it
if not mode then
  -- The waiting writers first: a key of another type there is refused before the lock is written.
  local failed = redis.pcall('zrem', writers, field)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(writers, nil, failed.err)
  end
  redis.call('hset', lock, 'mode', 'write', field, 1)
  redis.call('pexpire', lock, lease)
  if held ~= 0 then
    remember(memo, {1, 1, 0})
  end
  return {1, 1, 0}
end
local count = mode == 'write' and tonumber(redis.call('hget', lock, field))
if count and MODE == 0 and count ~= held then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  --! INCLUDE acquired.lua
  local found, reply = acquired(memo, held, lock, field, count, false)
  if found then return reply end
end
if count then
  if reentrant ~= '1' then
    return {2}
  end
  local n = redis.call('hincrby', lock, field, 1)
  redis.call('pexpire', lock, math.max(redis.call('pttl', lock), 0) + tonumber(lease))
  if count ~= held then
    remember(memo, {1, n, 0})
  end
  return {1, n, 0}
end
if mode == 'read' and redis.call('hexists', lock, owner) == 1 then
  return {3}
end
if policy ~= '0' and waits == '1' then
  -- Announce the waiting writer: new readers stay out until it is in, gives up, or stops asking.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local failed = redis.pcall('zadd', writers, now + tonumber(policy), field)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(writers, nil, failed.err)
  end
  if redis.call('pttl', writers) < tonumber(policy) then
    redis.call('pexpire', writers, policy)
  end
end
return {0, redis.call('pttl', lock)}
