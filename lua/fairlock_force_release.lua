-- Release a fair lock whoever holds it, and wake the first waiter that is still there.
-- KEYS[1] lock, KEYS[2] waiter queue, KEYS[3] waiter deadlines, KEYS[4] channel prefix
-- ARGV[1] publish command. Returns 1 if the lock was held.
local held = redis.call('del', KEYS[1])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then
    break
  end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if deadline and deadline > now then
    redis.call(ARGV[1], KEYS[4] .. ':' .. head, '0')
    break
  end
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], head)
end
return held
