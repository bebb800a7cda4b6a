-- Acquire the write hold of a read-write lock (Redisson's layout: field 'OWNER:write' = hold count).
-- KEYS[1] lock, KEYS[2] waiting writers (ZSET, writer preference only)
-- ARGV[1] lease ms, ARGV[2] write field, ARGV[3] the owner's read field, ARGV[4] '1' reentrant,
-- ARGV[5] how long a waiting writer keeps new readers out, ms ('0': no writer preference)
-- Returns {1, count} when acquired; {0, ms} when the caller must wait, ms bounding the wait (unknown
-- when <= 0); {2} when the owner writes already and re-entry is not allowed; {3} when the owner
-- reads: a read hold is never upgraded, since waiting for the other readers could wait for ever.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('zrem', KEYS[2], ARGV[2])
  return {1, 1}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if ARGV[4] ~= '1' then
    return {2}
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), 0) + tonumber(ARGV[1]))
  return {1, count}
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return {3}
end
if ARGV[5] ~= '0' then
  -- Announce the waiting writer: new readers stay out until it is in, gives up, or stops asking.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[5]), ARGV[2])
  if redis.call('pttl', KEYS[2]) < tonumber(ARGV[5]) then
    redis.call('pexpire', KEYS[2], ARGV[5])
  end
end
return {0, redis.call('pttl', KEYS[1])}
