--! KEYS lock queue deadlines counter channel records memo
--! ARGV field tag queued slot publish numsub rid
-- A waiter gives up: it gives back a grant nobody took, leaves the queue (queued '1') and gives its
-- slot back to everyone behind it. If it was next and the lock is free, the new head is woken (or
-- handed the lock), so that its turn does not wait for a timer (fairlock_wake.lua comes first, with
-- the order of KEYS). tag is the acquisition's ('' for none).
-- Returns 1 if the owner was queued or granted the lock. Sending it twice does no more than sending
-- it once. rid: the acquisition's request id. A try of it still on its way (written on a connection
-- its client gave up, run once a stalled server resumes) must take no place once this has run: its
-- memo says so for a minute (fairlock_acquire.lua), unless the owner holds the lock (a refused
-- re-entry, which took no place).
local slot = tonumber(ARGV[4])
if ARGV[3] == '1' and ARGV[7] ~= '' and redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  redis.call('set', KEYS[7] .. ARGV[7], '-', 'px', 60000)
end
local rec = ARGV[2] ~= '' and redis.call('hget', KEYS[6], ARGV[1])
if rec then
  local _, granted = string.match(rec, '^%-(%d+) (%S+)$')
  local _, waiting = string.match(rec, '^(%d+) (%S+) ')
  if granted == ARGV[2] then
    -- Handed the lock after its last try: the grant took its place in the queue.
    redis.call('hdel', KEYS[6], ARGV[1])
    local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
    if not count then
      return 0
    end
    if count > 1 then -- another goroutine of the owner entered on top of the grant
      redis.call('hincrby', KEYS[1], ARGV[1], -1)
    else
      redis.call('del', KEYS[1])
      wake(slot, ARGV[5], ARGV[6])
    end
    return 1
  end
  if waiting == ARGV[2] then
    redis.call('hdel', KEYS[6], ARGV[1])
  end
end
if ARGV[3] ~= '1' then
  return 0
end
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
    redis.call('zincrby', KEYS[3], -slot, queue[i])
  end
end
redis.call('lrem', KEYS[2], 0, ARGV[1])
if at == 1 and redis.call('exists', KEYS[1]) == 0 then
  wake(slot, ARGV[5], ARGV[6])
end
return 1
