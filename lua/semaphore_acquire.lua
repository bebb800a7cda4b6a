-- Take permits from a counting semaphore (Redisson's layout: a string holding the available count; a
-- missing key counts as 0).
-- KEYS[1] semaphore, KEYS[2] waiter records, KEYS[3] clients (semaphore_wake.lua)
-- ARGV[1] permits wanted, ARGV[2] ms within which this waiter will try again ('0': record nothing),
-- ARGV[3] the waiter's record, ARGV[4] client id, ARGV[5] ms for which the client listens after its
-- last waiter left, ARGV[6] '1' when an earlier try of this wait recorded the waiter
-- Returns 1 when they were taken, 0 when fewer are available.
local v = redis.call('get', KEYS[1])
local available = 0
if v ~= false then
  available = tonumber(v)
  if available == nil then
    return redis.error_reply('ERR semaphore count is not an integer')
  end
end
if v ~= false and available >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  if ARGV[6] == '1' then
    redis.call('zrem', KEYS[2], ARGV[3])
  end
  return 1
end
if ARGV[2] ~= '0' then
  local t = redis.call('time')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local window = tonumber(ARGV[2])
  redis.call('zadd', KEYS[2], string.format('%.0f', (t[1] * 1000000 + t[2]) + window * 1000), ARGV[3])
  if redis.call('pttl', KEYS[2]) < window then
    redis.call('pexpire', KEYS[2], window)
  end
  local linger = window + tonumber(ARGV[5])
  redis.call('zadd', KEYS[3], now + linger, ARGV[4])
  redis.call('pexpire', KEYS[3], linger)
end
return 0
