--! KEYS lock queue deadlines counter channel records memo
--! ARGV field held rid lease slot reentrant fenced waits publish tag grant numsub
-- Try to acquire a fair lock (Redisson's RedissonFairLock layout: the lock a HASH owner -> count, the
-- queue a LIST of owners, FIFO, the deadlines a ZSET owner -> ms by which the waiter must come back).
-- KEYS as fairlock_wake.lua says. Replies as core/lock.go says ({0, ms, score}:
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
--! INCLUDE extend.lua fairlock_wake.lua once.lua
local lock, queue, deadlines, counter, channel, records, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local field, held, rid, lease, slot, reentrant, fenced = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local waits, publish, tag, grant, numsub = ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]
memo = memo .. rid

-- token takes a fencing token, if the lock hands them out (token.lua, defined only then): the token,
-- or nil and the refusal.
local function token()
  if fenced ~= '1' then
    return 0
  end
  --! INCLUDE token.lua
  return take_token(counter, fenced)
end

if MODE == 1 then
  -- {0, 1} when the acquisition is over: its waiter left (fairlock_leave.lua).
  local found, reply = recall(memo)
  if found then return reply end
  local n = tonumber(redis.call('hget', lock, field))
  if n == held + 1 then
    -- The first send acquired, or a release handed the lock to this waiter since: then its mark
    -- goes, as a try that finds it takes it, or a leave would give back the lock it holds.
    local rec = tag ~= '' and redis.pcall('hget', records, field)
    local t, granted = string.match(type(rec) == 'string' and rec or '', '^%-(%d+) (%S+)$')
    if granted == tag then
      redis.call('hdel', records, field)
      return {1, n, tonumber(t)}
    end
    return {1, n, fenced == '1' and tonumber(redis.call('get', counter)) or 0}
  end
end

local pttl = redis.call('pttl', lock)
local count
if pttl ~= -2 then
  --! INCLUDE lockhash.lua
  local refused
  count, refused = hold_count(lock, field)
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
    local rec = redis.pcall('hget', records, field)
    if type(rec) == 'table' then
      --! INCLUDE refuse.lua
      return refuse(records, nil, rec.err)
    end
    local t, granted = string.match(rec or '', '^%-(%d+) (%S+)$')
    if granted == tag then
      redis.call('hdel', records, field)
      extend(lock, lease)
      if count ~= held + 1 then
        remember(memo, {1, count, t})
      end
      return {1, count, tonumber(t)}
    end
  end
  if MODE == 0 and count ~= held then
    -- Not the count the client expects: a send of this call made again after a connection failure
    -- may have run first (this one was held up on the failed connection). It answers as that did.
    local found, reply = recall(memo)
    if found and not (reply and reply[1] == 0) then -- a leave's mark ({0, 1}) is for the queue's place
      return reply
    end
    if count == held + 1 then
      return {1, count, fenced == '1' and tonumber(redis.call('get', counter)) or 0}
    end
  end
  if reentrant ~= '1' then
    return {2}
  end
  local tok, refused = token()
  if refused then
    return refused
  end
  local n = redis.call('hincrby', lock, field, 1)
  extend(lock, lease) -- a re-entry never shortens what an outer hold was promised
  if count ~= held then
    remember(memo, {1, n, tok})
  end
  return {1, n, tok}
end

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local head, dropped, refused = pass_over(now, field, numsub, slot)
if refused then
  return refused
end
if pttl == -2 and (not head or head == field) then
  local tok, refused = token()
  if refused then
    return refused
  end
  local failed = (tag ~= '') and redis.pcall('hdel', records, field)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(records, nil, failed.err)
  end
  if head then
    take_head(field, slot)
    -- The next waiter is now the head: tell it, so that it learns when this hold's lease ends (a
    -- lease that ends without a release tells nobody) instead of at its next re-check.
    local next = redis.call('lindex', queue, 0)
    if next then
      redis.call(publish, channel .. next, '0')
    end
  end
  redis.call('hset', lock, field, 1)
  redis.call('pexpire', lock, lease)
  if held ~= 0 then
    remember(memo, {1, 1, tok})
  end
  return {1, 1, tok}
end

if dropped and pttl == -2 then
  wake(slot, publish, numsub)
end

local pos = redis.call('lpos', queue, field)
if not pos then
  if waits ~= '1' or recall(memo) then
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
  local failed = redis.pcall('zadd', deadlines, math.max(base + slot, now + (pos + 1) * slot), field)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(deadlines, nil, failed.err)
  end
  redis.call('rpush', queue, field)
else
  local deadline = now + (pos + 1) * slot
  if (tonumber(redis.call('zscore', deadlines, field)) or 0) < deadline then
    redis.call('zadd', deadlines, deadline, field)
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
  local failed = redis.pcall('hset', records, field, score .. ' ' .. tag .. ' ' .. grant .. ' ' .. fenced)
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
