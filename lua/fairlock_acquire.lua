--! KEYS lock queue deadlines counter channel records memo
--! ARGV field held rid lease slot reentrant fenced waits publish tag grant numsub
-- Try to acquire a fair lock (Redisson's RedissonFairLock layout: the lock a HASH owner -> count, the
-- queue a LIST of owners, FIFO, the deadlines a ZSET owner -> ms by which the waiter must come back).
-- KEYS as fairlock_wake.lua says, which comes first. Replies as core/lock.go says ({0, ms, score}:
-- the waiter's record was written with that score), exactly once as rlock_try.lua says.
-- slot: the wait slot in ms; waits: '1' to take a place in the queue when not acquired; tag: the
-- acquisition's tag when its waiter listens for a hand-over ('' otherwise: no record); grant: the
-- lease a release that hands the lock over gives ('0': a wake-up only); numsub: '' for no hand-over.
--
-- A new waiter's deadline is Redisson's; beyond Redisson, every try pushes it on to at least (its
-- position + 1) slots from now, so a live waiter never loses its place however long the holder keeps
-- the lock (nor when a Java acquisition lowers it by a slot no longer than ours), and one that
-- stops trying loses it one slot after it was last heard from, when it reaches the head (at once
-- when nobody listens on its channel any more: see pass_over); the caller is never passed over
-- itself, since it is back; and a try that passes over dead waiters while the lock is free wakes the
-- new head.
--
-- A name that holds anything but a lock hash, or a side key of another type, is refused before
-- anything is written (lockhash.lua, refuse.lua; pass_over reads the queue, the deadlines and the
-- records first): the fencing increment and the writes to the records go before the lock's and the
-- queue's.
local lock, queue, deadlines, prefix, records, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7] .. ARGV[3]
local me, held, slot, tag = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5]), ARGV[10]

-- token takes a fencing token, if the lock hands them out: the token, or nil and the refusal.
local function token()
  if ARGV[7] ~= '1' then
    return 0
  end
  --! INCLUDE token.lua
  local t, err = next_token(KEYS[4])
  if err then
    --! INCLUDE refuse.lua
    return nil, refuse(KEYS[4], nil, err)
  end
  return t
end

if MODE == 1 then
  local m = redis.call('get', memo)
  if m == '-' then -- the acquisition is over: its waiter left (fairlock_leave.lua)
    return {0, 1}
  end
  if m then
    local n, t = string.match(m, '^(%d+) (%d+)$')
    return {1, tonumber(n), tonumber(t)}
  end
  local n = tonumber(redis.call('hget', lock, me))
  if n == held + 1 then
    -- The first send acquired, or a release handed the lock to this waiter since: then its mark
    -- goes, as a try that finds it takes it, or a leave would give back the lock it holds.
    local rec = tag ~= '' and redis.pcall('hget', records, me)
    local t, granted = string.match(type(rec) == 'string' and rec or '', '^%-(%d+) (%S+)$')
    if granted == tag then
      redis.call('hdel', records, me)
      return {1, n, tonumber(t)}
    end
    return {1, n, ARGV[7] == '1' and tonumber(redis.call('get', KEYS[4])) or 0}
  end
end

local pttl = redis.call('pttl', lock)
local count
if pttl ~= -2 then
  --! INCLUDE lockhash.lua
  local refused
  count, refused = hold_count(lock, me)
  if refused then
    return refused
  end
  if count == 0 then
    count = nil
  end
end
if count then
  if tag ~= '' then
    -- A release may have handed the lock to this waiter: the grant is this acquisition, and its
    -- lease starts again now, since the waiter counts it from this try.
    local rec = redis.pcall('hget', records, me)
    if type(rec) == 'table' then
      --! INCLUDE refuse.lua
      return refuse(records, nil, rec.err)
    end
    local t, granted = string.match(rec or '', '^%-(%d+) (%S+)$')
    if granted == tag then
      redis.call('hdel', records, me)
      extend(lock, ARGV[4])
      if count ~= held + 1 then
        redis.call('set', memo, count .. ' ' .. t, 'px', 60000)
      end
      return {1, count, tonumber(t)}
    end
  end
  if MODE == 0 and count ~= held then
    -- Not the count the client expects: a send of this call made again after a connection failure
    -- may have run first (this one was held up on the failed connection). It answers as that did.
    local m = redis.call('get', memo)
    if m and m ~= '-' then
      local n, t = string.match(m, '^(%d+) (%d+)$')
      return {1, tonumber(n), tonumber(t)}
    end
    if count == held + 1 then
      return {1, count, ARGV[7] == '1' and tonumber(redis.call('get', KEYS[4])) or 0}
    end
  end
  if ARGV[6] ~= '1' then
    return {2}
  end
  local tok, refused = token()
  if refused then
    return refused
  end
  local n = redis.call('hincrby', lock, me, 1)
  extend(lock, ARGV[4]) -- a re-entry never shortens what an outer hold was promised
  if count ~= held then
    redis.call('set', memo, n .. ' ' .. tok, 'px', 60000)
  end
  return {1, n, tok}
end

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local head, dropped, refused = pass_over(now, me, ARGV[12])
if refused then
  return refused
end
if pttl == -2 and (not head or head == me) then
  local tok, refused = token()
  if refused then
    return refused
  end
  local failed = (tag ~= '') and redis.pcall('hdel', records, me)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(records, nil, failed.err)
  end
  if head then
    take_head(me, slot)
    -- The next waiter is now the head: tell it, so that it learns when this hold's lease ends (a
    -- lease that ends without a release tells nobody) instead of at its next re-check.
    local next = redis.call('lindex', queue, 0)
    if next then
      redis.call(ARGV[9], prefix .. next, '0')
    end
  end
  redis.call('hset', lock, me, 1)
  redis.call('pexpire', lock, ARGV[4])
  if held ~= 0 then
    redis.call('set', memo, '1 ' .. tok, 'px', 60000)
  end
  return {1, 1, tok}
end

if dropped and pttl == -2 then
  wake(slot, ARGV[9], ARGV[12])
end

local pos = redis.call('lpos', queue, me)
if not pos then
  if ARGV[8] ~= '1' or redis.call('exists', memo) == 1 then
    return {0, pttl} -- no place: not asked for, or the waiter has left already
  end
  -- Redisson's estimate (the last waiter's deadline, or the lock's end, plus one slot), which the
  -- Java waiters behind build theirs on and which a Java acquisition lowers by its own slot; at least
  -- one slot per place from now, as every later try pushes it on.
  pos = redis.call('llen', queue)
  local last = redis.call('lindex', queue, -1)
  local base = last and tonumber(redis.call('zscore', deadlines, last)) or now + math.max(pttl, 0)
  -- The deadline first: a deadlines key of another type, which pass_over reads only when someone
  -- waits, is refused before the queue is written.
  local failed = redis.pcall('zadd', deadlines, math.max(base + slot, now + (pos + 1) * slot), me)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(deadlines, nil, failed.err)
  end
  redis.call('rpush', queue, me)
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
  local failed = redis.pcall('hset', records, me, score .. ' ' .. tag .. ' ' .. ARGV[11] .. ' ' .. ARGV[7])
  if type(failed) == 'table' then
    -- Its place in the queue is taken: the waiter, refused, leaves it (fairlock_leave.lua).
    --! INCLUDE refuse.lua
    return refuse(records, nil, failed.err)
  end
  local keep = (pos + 2) * slot
  if redis.call('pttl', records) < keep then
    redis.call('pexpire', records, keep)
  end
  return {0, wait, tonumber(score)}
end
return {0, wait}
