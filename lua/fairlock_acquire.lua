-- Try to acquire a fair lock (Redisson's RedissonFairLock layout: the lock a HASH owner -> count, the
-- queue a LIST of owners, FIFO, the deadlines a ZSET owner -> ms by which the waiter must come back).
-- KEYS[1..6] as fairlock_wake.lua says, which comes first.
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] slot ms, ARGV[4] '1' reentrant, ARGV[5] '1' fenced,
-- ARGV[6] '1' to take a place in the queue when not acquired, ARGV[7] publish command,
-- ARGV[8] the acquisition's tag when its waiter listens for a hand-over ('' otherwise: no record),
-- ARGV[9] numsub command ('' for no hand-over).
-- Returns {1, count, token} when acquired; {2} when the owner holds it already and re-entry is not
-- allowed; {0, ms} when not acquired: try again within ms, or sooner if the owner's channel says so
-- ({0, ms, score} when the waiter's record was written, score being its new score).
--
-- A new waiter's deadline is Redisson's; beyond Redisson, every try pushes it on to at least (its
-- position + 1) slots from now, so a live waiter never loses its place however long the holder keeps
-- the lock (nor when a Java acquisition lowers it by a slot no longer than ours), and one that
-- stops trying loses it one slot after it was last heard from, when it reaches the head (at once
-- when nobody listens on its channel any more: see pass_over); the caller is never passed over
-- itself, since it is back; and a try that passes over dead waiters while the lock is free wakes the
-- new head.
local lock, queue, deadlines, prefix, records = KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6]
local me, slot, tag = ARGV[2], tonumber(ARGV[3]), ARGV[8]

local function token()
  if ARGV[5] == '1' then
    return redis.call('incr', KEYS[4])
  end
  return 0
end

if redis.call('hexists', lock, me) == 1 then
  if tag ~= '' then
    -- A release may have handed the lock to this waiter: the grant is this acquisition, and its
    -- lease starts again now, since the waiter counts it from this try.
    local token, granted = string.match(redis.call('hget', records, me) or '', '^%-(%d+) (%S+)$')
    if granted == tag then
      redis.call('hdel', records, me)
      extend(lock, ARGV[1])
      return {1, tonumber(redis.call('hget', lock, me)), tonumber(token)}
    end
  end
  if ARGV[4] ~= '1' then
    return {2}
  end
  local count = redis.call('hincrby', lock, me, 1)
  extend(lock, ARGV[1]) -- a re-entry never shortens what an outer hold was promised
  return {1, count, token()}
end

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local head, dropped = pass_over(now, me, ARGV[9])
local pttl = redis.call('pttl', lock)
if pttl == -2 and (not head or head == me) then
  if head then
    take_head(me, slot)
    if tag ~= '' then
      redis.call('hdel', records, me)
    end
    -- The next waiter is now the head: tell it, so that it learns when this hold's lease ends (a
    -- lease that ends without a release tells nobody) instead of at its next re-check.
    local next = redis.call('lindex', queue, 0)
    if next then
      redis.call(ARGV[7], prefix .. ':' .. next, '0')
    end
  end
  redis.call('hset', lock, me, 1)
  redis.call('pexpire', lock, ARGV[1])
  return {1, 1, token()}
end

if dropped and pttl == -2 then
  wake(slot, ARGV[7], ARGV[9])
end

local pos = redis.call('lpos', queue, me)
if not pos then
  if ARGV[6] ~= '1' then
    return {0, pttl}
  end
  -- Redisson's estimate (the last waiter's deadline, or the lock's end, plus one slot), which the
  -- Java waiters behind build theirs on and which a Java acquisition lowers by its own slot; at least
  -- one slot per place from now, as every later try pushes it on.
  pos = redis.call('llen', queue)
  local last = redis.call('lindex', queue, -1)
  local base = last and tonumber(redis.call('zscore', deadlines, last)) or now + math.max(pttl, 0)
  redis.call('rpush', queue, me)
  redis.call('zadd', deadlines, math.max(base + slot, now + (pos + 1) * slot), me)
else
  local deadline = now + (pos + 1) * slot
  if (tonumber(redis.call('zscore', deadlines, me)) or 0) < deadline then
    redis.call('zadd', deadlines, deadline, me)
  end
end

-- Come back before the deadline passes: within a third of a slot, or when the holder's lease ends if
-- this waiter is next (PTTL says 0 in the lease's last millisecond: that is not "unknown").
local wait = math.max(1, math.floor(slot / 3))
if pos == 0 and pttl >= 0 then
  wait = math.max(1, math.min(pttl, wait))
end
if tag ~= '' then
  local score = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
  redis.call('hset', records, me, score .. ' ' .. tag .. ' ' .. ARGV[1] .. ' ' .. ARGV[5])
  local keep = (pos + 2) * slot
  if redis.call('pttl', records) < keep then
    redis.call('pexpire', records, keep)
  end
  return {0, wait, tonumber(score)}
end
return {0, wait}
