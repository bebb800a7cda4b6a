--! KEYS count permits channel memo
--! ARGV op publish rid
-- The permit-expirable semaphore (Redisson's layout). KEYS[1] holds the available count (a missing
-- key counts as 0), KEYS[2] is a ZSET of the acquired permits: member = permit id, score = absolute
-- expiry in ms by the server's clock, or NEVER. KEYS[3] is the channel that hears the new available
-- count. KEYS[4] is the memos' prefix (once.lua comes first).
-- ARGV[1] operation, ARGV[2] publish command, ARGV[3] the call's request id, then the operation's
-- arguments (below).
--
-- Exactly once (core/once.go): a re-sent acquire (MODE 1) finds its permits by their ids, a re-sent
-- release finds them gone; tryset, add and delete keep their answer under the memo.
--
-- Every operation first returns expired permits to the pool; when it did, and permits are available
-- once the operation is done, it announces the count, so that waiters learn of permits that came back
-- by expiring.
local NEVER = 922337203685477
local op, pub, memo = ARGV[1], ARGV[2], KEYS[4] .. ARGV[3]

-- A key that holds anything but a count, or permits of another type, is refused before anything is
-- written (count.lua): nothing is deleted, expired or published.
local count, refused = read_count(KEYS[1])
if refused then
  return refused
end

-- delete and expire act on the semaphore as a whole, permits and all (as Redisson does both keys):
-- nothing is returned to the pool first, nor published. delete returns the number of keys deleted;
-- expire (ARGV[4] ms) returns 1 when either key exists and now has the TTL.
local failed = ((op == 'delete' or op == 'expire')) and redis.pcall('zcard', KEYS[2])
if type(failed) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(KEYS[2], nil, failed.err)
end
if op == 'delete' then
  local found, reply = recall(memo)
  if found then
    return reply
  end
  return remember(memo, redis.call('del', KEYS[1], KEYS[2]))
end
if op == 'expire' then
  local a = redis.call('pexpire', KEYS[1], ARGV[4])
  local b = redis.call('pexpire', KEYS[2], ARGV[4])
  return math.max(a, b)
end

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Expired permits leave first (and a permits key of another type fails here, before any write).
local expired = redis.pcall('zremrangebyscore', KEYS[2], '-inf', now)
if type(expired) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(KEYS[2], nil, expired.err)
end

local function available()
  local v = redis.call('get', KEYS[1])
  if v == false then
    return 0, false
  end
  return tonumber(v), true
end

local function expiry(lease)
  lease = tonumber(lease)
  if lease > 0 then
    return now + lease
  end
  return NEVER
end

-- A permit returns only into the pool it was taken from. The count is never removed while permits
-- are out, except with the whole semaphore (DEL, an expiry, an eviction): permits left in KEYS[2]
-- then belong to a pool that is gone, and would add themselves to one set anew (two holders of one
-- permit). Acquire gives KEYS[2] the count's TTL, as Redisson does; this catches a TTL given later.
if not count then
  redis.call('del', KEYS[2])
  expired = 0
end
if expired > 0 then
  redis.call('incrby', KEYS[1], expired)
end

-- announce publishes n when expired permits came back and n are available.
local function announce(n)
  if expired > 0 and n > 0 then
    redis.call(pub, KEYS[3], n)
  end
end

-- acquire: ARGV[4] lease ms (0: never expires), ARGV[5..] the new permit ids, one per permit.
-- Returns {1} when acquired; {0, ms} when too few are available, ms being the time until the
-- earliest expiry (0 when no permit expires); {2, total} when more permits are asked for than the
-- semaphore has in all.
if op == 'acquire' then
  if MODE ~= 2 and redis.call('zscore', KEYS[2], ARGV[5]) then
    return {1} -- another send of this call took them (a first send held up may come after)
  end
  local n = #ARGV - 4
  local avail, set = available()
  if avail >= n then
    redis.call('decrby', KEYS[1], n)
    local score = expiry(ARGV[4])
    for i = 5, #ARGV do
      redis.call('zadd', KEYS[2], score, ARGV[i])
    end
    -- The permits end with the pool (Redisson's rule), and live as long as it does.
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
      redis.call('pexpire', KEYS[2], ttl)
    else
      redis.call('persist', KEYS[2])
    end
    announce(avail - n)
    return {1}
  end
  announce(avail)
  local total = avail + redis.call('zcard', KEYS[2])
  if set and n > total then
    return {2, total}
  end
  local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
  if first[2] ~= nil and tonumber(first[2]) < NEVER then
    return {0, tonumber(first[2]) - now}
  end
  return {0, -1} -- no lease will end: only a release can free a permit
end

-- release: ARGV[4..] permit ids, all or none. Returns {1, new count}, or {0, i} when the i-th id is
-- not acquired (expired, released, or never issued) and nothing was released.
if op == 'release' then
  if MODE == 1 then
    -- Sent again: when none of the ids is acquired any more, the first send released them (or
    -- their leases ended meanwhile: either way they are back).
    local gone = true
    for i = 4, #ARGV do
      gone = gone and not redis.call('zscore', KEYS[2], ARGV[i])
    end
    if gone then
      return {1, (available())}
    end
  end
  for i = 4, #ARGV do
    if not redis.call('zscore', KEYS[2], ARGV[i]) then
      announce(available())
      return {0, i - 3}
    end
  end
  for i = 4, #ARGV do
    redis.call('zrem', KEYS[2], ARGV[i])
  end
  local n = redis.call('incrby', KEYS[1], #ARGV - 3)
  redis.call(pub, KEYS[3], n)
  return {1, n}
end

-- lease: ARGV[4] new lease ms from now (0: never expires), ARGV[5] permit id. Returns 1, or 0 when
-- the permit is not acquired.
if op == 'lease' then
  announce(available())
  if not redis.call('zscore', KEYS[2], ARGV[5]) then
    return 0
  end
  redis.call('zadd', KEYS[2], 'xx', expiry(ARGV[4]), ARGV[5])
  return 1
end

-- left: ARGV[4] permit id. Returns the ms its lease has left, -1 when it never expires, or -2 when
-- it is not acquired (Redisson's getLeaseTime).
if op == 'left' then
  announce(available())
  local score = tonumber(redis.call('zscore', KEYS[2], ARGV[4]))
  if not score then
    return -2
  end
  if score >= NEVER then
    return -1
  end
  return score - now
end

-- count: returns {available, acquired}.
if op == 'count' then
  local avail = available()
  announce(avail)
  return {avail, redis.call('zcard', KEYS[2])}
end

-- set: ARGV[4] total permits: the available count becomes total - acquired. Returns the new count.
if op == 'set' then
  local avail = available()
  local n = tonumber(ARGV[4]) - redis.call('zcard', KEYS[2])
  redis.call('incrby', KEYS[1], n - avail)
  redis.call(pub, KEYS[3], n)
  return n
end

-- tryset: ARGV[4] permits, set only if the semaphore was never set. Returns 1 when set, else 0.
if op == 'tryset' then
  local found, reply = recall(memo)
  if found then
    return reply
  end
  local avail, set = available()
  if set then
    announce(avail)
    return remember(memo, 0)
  end
  redis.call('set', KEYS[1], ARGV[4])
  redis.call(pub, KEYS[3], ARGV[4])
  return remember(memo, 1)
end

-- add: ARGV[4] permits to add (may be negative). Returns the new count.
if op == 'add' then
  local found, reply = recall(memo)
  if found then
    return reply
  end
  local n = redis.call('incrby', KEYS[1], ARGV[4])
  redis.call(pub, KEYS[3], n)
  return remember(memo, n)
end

return redis.error_reply('ERR unknown semaphore operation ' .. tostring(op))
