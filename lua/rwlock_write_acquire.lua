--! KEYS lock writers memo
--! ARGV field owner held rid lease reentrant policy waits
-- Acquire the write hold of a read-write lock (Redisson's layout: field 'OWNER:write' = hold count).
-- Replies as core/lock.go says ({3}: the owner reads, and a read hold is never upgraded, since
-- waiting for the other readers could wait for ever), exactly once as rlock_try.lua says.
-- policy: how long a waiting writer keeps new readers out, ms ('0': no writer preference); waits:
-- '1' when this acquisition waits (a single try keeps nobody out). A name that holds anything but a
-- read-write lock, or waiting writers of another type, is refused before anything is written
-- (refuse.lua).
local lock, memo, held = KEYS[1], KEYS[3] .. ARGV[4], tonumber(ARGV[3])
if MODE == 1 then
  local m = redis.call('get', memo)
  if m then
    return {1, tonumber(m), 0}
  end
  local n = tonumber(redis.call('hget', lock, ARGV[1]))
  if n == held + 1 then
    return {1, n, 0}
  end
end
local mode = redis.pcall('hget', lock, 'mode')
local free = mode == false and redis.call('exists', lock) == 0
if not free and (type(mode) == 'table' or (mode ~= 'read' and mode ~= 'write')) then
  -- No read-write lock (a key of another type, a hash without a mode): never write into it.
  --! INCLUDE refuse.lua
  return refuse(lock)
end
if free then
  -- The waiting writers first: a key of another type there is refused before the lock is written.
  local failed = redis.pcall('zrem', KEYS[2], ARGV[1])
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[2], nil, failed.err)
  end
  redis.call('hset', lock, 'mode', 'write', ARGV[1], 1)
  redis.call('pexpire', lock, ARGV[5])
  if held ~= 0 then
    redis.call('set', memo, 1, 'px', 60000)
  end
  return {1, 1, 0}
end
local count = mode == 'write' and tonumber(redis.call('hget', lock, ARGV[1]))
if count and MODE == 0 and count ~= held then
  -- Not the count the client expects: a send of this call made again after a connection failure may
  -- have run first (this one was held up on the failed connection). It answers as that send did.
  local m = redis.call('get', memo)
  if m then
    return {1, tonumber(m), 0}
  end
  if count == held + 1 then
    return {1, count, 0}
  end
end
if count then
  if ARGV[6] ~= '1' then
    return {2}
  end
  local n = redis.call('hincrby', lock, ARGV[1], 1)
  redis.call('pexpire', lock, math.max(redis.call('pttl', lock), 0) + tonumber(ARGV[5]))
  if count ~= held then
    redis.call('set', memo, n, 'px', 60000)
  end
  return {1, n, 0}
end
if mode == 'read' and redis.call('hexists', lock, ARGV[2]) == 1 then
  return {3}
end
if ARGV[7] ~= '0' and ARGV[8] == '1' then
  -- Announce the waiting writer: new readers stay out until it is in, gives up, or stops asking.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local failed = redis.pcall('zadd', KEYS[2], now + tonumber(ARGV[7]), ARGV[1])
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[2], nil, failed.err)
  end
  if redis.call('pttl', KEYS[2]) < tonumber(ARGV[7]) then
    redis.call('pexpire', KEYS[2], ARGV[7])
  end
end
return {0, redis.call('pttl', lock)}
