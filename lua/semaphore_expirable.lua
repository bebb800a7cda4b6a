--! KEYS count permits channel memo
--! ARGV op publish rid arg id
-- The permit-expirable semaphore (Redisson's layout). count holds the available count (a missing key
-- counts as 0), permits is a ZSET of the acquired permits: member = permit id, score = absolute
-- expiry in ms by the server's clock, or NEVER. channel hears the new available count. memo is the
-- memos' prefix.
-- op: the operation; publish: the publish command; rid: the call's request id; arg and id (and the
-- ARGV after them): the operation's arguments (below).
--
-- Exactly once (core/once.go): a re-sent acquire (MODE 1) finds its permits by their ids, a re-sent
-- release finds them gone; tryset, add and delete keep their answer under the memo.
--
-- Every operation first returns expired permits to the pool; when it did, and permits are available
-- once the operation is done, it announces the count, so that waiters learn of permits that came back
-- by expiring.
--! INCLUDE count.lua once.lua
local count, permits, channel, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, publish, rid, arg, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local NEVER = 922337203685477
memo = memo .. rid

-- A key that holds anything but a count, or permits of another type, is refused before anything is
-- written (count.lua): nothing is deleted, expired or published.
local left, refused = read_count(count)
if refused then
  return refused
end

-- delete and expire act on the semaphore as a whole, permits and all (as Redisson does both keys):
-- nothing is returned to the pool first, nor published. delete returns the number of keys deleted;
-- expire (arg ms) returns 1 when either key exists and now has the TTL.
local failed = ((op == 'delete' or op == 'expire')) and redis.pcall('zcard', permits)
if type(failed) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(permits, nil, failed.err)
end
if op == 'delete' then
  local found, reply = recall(memo)
  if found then return reply end
  return remember(memo, redis.call('del', count, permits))
end
if op == 'expire' then
  local a = redis.call('pexpire', count, arg)
  local b = redis.call('pexpire', permits, arg)
  return math.max(a, b)
end

-- Expired permits leave first (and a permits key of another type fails here, before any write).
--! INCLUDE expired.lua
local now, expired
now, refused, expired = drop_expired(permits)
if refused then
  return refused
end

local function available()
  local v = redis.call('get', count)
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
-- are out, except with the whole semaphore (DEL, an expiry, an eviction): permits left in permits
-- then belong to a pool that is gone, and would add themselves to one set anew (two holders of one
-- permit). Acquire gives permits the count's TTL, as Redisson does; this catches a TTL given later.
if not left then
  redis.call('del', permits)
  expired = 0
end
if expired > 0 then
  redis.call('incrby', count, expired)
end

-- announce publishes n when expired permits came back and n are available.
local function announce(n)
  if expired > 0 and n > 0 then
    redis.call(publish, channel, n)
  end
end

-- acquire: arg the lease in ms (0: never expires), id and the ARGV after it the new permit ids, one
-- per permit.
-- Returns {1} when acquired; {0, ms} when too few are available, ms being the time until the
-- earliest expiry (0 when no permit expires); {2, total} when more permits are asked for than the
-- semaphore has in all.
if op == 'acquire' then
  if MODE ~= 2 and redis.call('zscore', permits, id) then
    return {1} -- another send of this call took them (a first send held up may come after)
  end
  local n = #ARGV - 4
  local avail, set = available()
  if avail >= n then
    redis.call('decrby', count, n)
    local score = expiry(arg)
    for i = 5, #ARGV do
      redis.call('zadd', permits, score, ARGV[i])
    end
    -- The permits end with the pool (Redisson's rule), and live as long as it does.
    local ttl = redis.call('pttl', count)
    if ttl > 0 then
      redis.call('pexpire', permits, ttl)
    else
      redis.call('persist', permits)
    end
    announce(avail - n)
    return {1}
  end
  announce(avail)
  local total = avail + redis.call('zcard', permits)
  if set and n > total then
    return {2, total}
  end
  local first = redis.call('zrange', permits, 0, 0, 'withscores')
  if first[2] ~= nil and tonumber(first[2]) < NEVER then
    return {0, tonumber(first[2]) - now}
  end
  return {0, -1} -- no lease will end: only a release can free a permit
end

-- release: arg and the ARGV after it, permit ids, all or none. Returns {1, new count}, or {0, i}
-- when the i-th id is not acquired (expired, released, or never issued) and nothing was released.
if op == 'release' then
  if MODE == 1 then
    -- Sent again: when none of the ids is acquired any more, the first send released them (or
    -- their leases ended meanwhile: either way they are back).
    local gone = true
    for i = 4, #ARGV do
      gone = gone and not redis.call('zscore', permits, ARGV[i])
    end
    if gone then
      return {1, (available())}
    end
  end
  for i = 4, #ARGV do
    if not redis.call('zscore', permits, ARGV[i]) then
      announce(available())
      return {0, i - 3}
    end
  end
  for i = 4, #ARGV do
    redis.call('zrem', permits, ARGV[i])
  end
  local n = redis.call('incrby', count, #ARGV - 3)
  redis.call(publish, channel, n)
  return {1, n}
end

-- lease: arg the new lease in ms from now (0: never expires), id the permit's. Returns 1, or 0 when
-- the permit is not acquired.
if op == 'lease' then
  announce(available())
  if not redis.call('zscore', permits, id) then
    return 0
  end
  redis.call('zadd', permits, 'xx', expiry(arg), id)
  return 1
end

-- left: arg the permit's id. Returns the ms its lease has left, -1 when it never expires, or -2 when
-- it is not acquired (Redisson's getLeaseTime).
if op == 'left' then
  announce(available())
  local score = tonumber(redis.call('zscore', permits, arg))
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
  return {avail, redis.call('zcard', permits)}
end

-- set: arg the total permits: the available count becomes total - acquired. Returns the new count.
if op == 'set' then
  local avail = available()
  local n = tonumber(arg) - redis.call('zcard', permits)
  redis.call('incrby', count, n - avail)
  redis.call(publish, channel, n)
  return n
end

-- tryset: arg the permits, set only if the semaphore was never set. Returns 1 when set, else 0.
if op == 'tryset' then
  local found, reply = recall(memo)
  if found then return reply end
  local avail, set = available()
  if set then
    announce(avail)
    return remember(memo, 0)
  end
  redis.call('set', count, arg)
  redis.call(publish, channel, arg)
  return remember(memo, 1)
end

-- add: arg the permits to add (may be negative). Returns the new count.
if op == 'add' then
  local found, reply = recall(memo)
  if found then return reply end
  local n = redis.call('incrby', count, arg)
  redis.call(publish, channel, n)
  return remember(memo, n)
end

return redis.error_reply('ERR unknown semaphore operation ' .. tostring(op))
