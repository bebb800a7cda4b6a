-- A waiter gives up: it leaves the queue and gives its slot back to everyone behind it. If it was
-- next and the lock is free, the new head is woken, so that its turn does not wait for a timer.
-- KEYS[1] lock, KEYS[2] waiter queue, KEYS[3] waiter deadlines, KEYS[4] channel prefix
-- ARGV[1] owner, ARGV[2] slot ms, ARGV[3] publish command. Returns 1 if the owner was queued.
-- Sending it twice does no more than sending it once.
local queue = redis.call('lrange', KEYS[2], 0, -1)
local at
for i, w in ipairs(queue) do
  if w == ARGV[1] then
    at = i
    break
  end
end
redis.call('zrem', KEYS[3], ARGV[1])
if not at then
  return 0
end
for i = at + 1, #queue do
  if redis.call('zscore', KEYS[3], queue[i]) then
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), queue[i])
  end
end
redis.call('lrem', KEYS[2], 0, ARGV[1])
if at == 1 and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, '0')
  end
end
return 1
