-- Release one hold of a fair lock; the last release wakes the first waiter that is still there.
-- KEYS[1] lock, KEYS[2] waiter queue, KEYS[3] waiter deadlines, KEYS[4] channel prefix,
-- KEYS[5] unlock latch of this request
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] publish command, ARGV[4] latch ttl ms
-- Returns the holds the owner keeps (0: released, the head waiter's channel got '0'), or -1 when the
-- owner held nothing. The latch makes a re-sent request answer as the first did instead of
-- releasing twice.
local done = redis.call('get', KEYS[5])
if done then
  if done == '1' then return 0 end
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[5], '0', 'px', ARGV[4])
  return count
end
redis.call('del', KEYS[1])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then
    break
  end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if deadline and deadline > now then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, '0')
    break
  end
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], head)
end
redis.call('set', KEYS[5], '1', 'px', ARGV[4])
return 0
