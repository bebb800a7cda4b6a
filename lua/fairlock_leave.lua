--! KEYS lock queue deadlines counter channel records memo
--! ARGV field tag queued slot publish numsub rid
-- A waiter gives up: it gives back a grant nobody took, leaves the queue (queued '1') and gives its
-- slot back to everyone behind it. If it was next and the lock is free, the new head is woken (or
-- handed the lock), so that its turn does not wait for a timer (fairlock_wake.lua, with the order of
-- KEYS). tag is the acquisition's ('' for none).
-- Returns 1 if the owner was queued or granted the lock. Sending it twice does no more than sending
-- it once. rid: the acquisition's request id. A try of it still on its way (written on a connection
-- its client gave up, run once a stalled server resumes) must take no place once this has run: its
-- memo says so, with the reply {0, 1} (fairlock_acquire.lua), unless the owner holds the lock (a
-- refused re-entry, which took no place).
--! INCLUDE fairlock_wake.lua once.lua
local lock, queue, deadlines, records, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[7]
local field, tag, queued, slot, publish, numsub, rid = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
if queued == '1' and rid ~= '' and redis.call('hexists', lock, field) == 0 then
  remember(memo .. rid, {0, 1})
end
local rec = tag ~= '' and redis.call('hget', records, field)
if rec then
  local _, granted = string.match(rec, '^%-(%d+) (%S+)$')
  local _, waiting = string.match(rec, '^(%d+) (%S+) ')
  if granted == tag then
    -- Handed the lock after its last try: the grant took its place in the queue.
    redis.call('hdel', records, field)
    local count = tonumber(redis.call('hget', lock, field))
    if not count then
      return 0
    end
    if count > 1 then -- another goroutine of the owner entered on top of the grant
      redis.call('hincrby', lock, field, -1)
    else
      redis.call('del', lock)
      wake(slot, publish, numsub)
    end
    return 1
  end
  if waiting == tag then
    redis.call('hdel', records, field)
  end
end
if queued ~= '1' then
  return 0
end
local waiters = redis.call('lrange', queue, 0, -1)
local at
for i, w in ipairs(waiters) do
  if w == field then
    at = i
    break
  end
end
redis.call('zrem', deadlines, field)
if not at then
  return 0
end
for i = at + 1, #waiters do
  if redis.call('zscore', deadlines, waiters[i]) then
    redis.call('zincrby', deadlines, -slot, waiters[i])
  end
end
redis.call('lrem', queue, 0, field)
if at == 1 and redis.call('exists', lock) == 0 then
  wake(slot, publish, numsub)
end
return 1
