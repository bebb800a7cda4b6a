--! KEYS lock memo
--! ARGV owner rid lease reentrant tail
-- A try of a group lock (grouplock.lua): it takes every value of the tail for owner, or
-- none. A value is free when nobody holds it, or its holder's expire_time has passed (that holder's
-- fields go); owner's own live values are entered again (their counts go up), unless reentrant is
-- '0': {2}. Replies as core/lock.go says: {1, count, 0} when acquired (count: the least hold count
-- among the values), {0, ms} when another owner holds a value (ms: until the last of those holds may
-- end, as Redisson answers).
--
-- Exactly once (core/once.go): a value's count is shared by every hold of its owner that covers it
-- (one owner may hold overlapping value sets), so the count the client expects (held) cannot tell
-- whether a lost send acquired. Every acquisition keeps its answer under the memo instead, which the
-- client deletes once it has the answer; every send of the try answers that before it tries (another
-- send of the call may have run first: the one made again after a connection failure, when this is
-- a first send held up on the failed connection), and does nothing once the call was given up
-- ('undone', grouplock_release.lua).
--
-- A name that holds anything but a group lock's hash (a lock's hash, an application's) is refused
-- before anything is written (foreign): a group lock and a lock on one name never both hold it.
--! INCLUDE grouplock.lua once.lua
local lock, memo = KEYS[1], KEYS[2]
local owner, rid, lease, reentrant = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
local now, before = now_ms(), redis.call('pttl', lock)
local holders, expiries = {}, {}
if before ~= -2 then
  local refused = foreign(lock)
  if refused then
    return refused
  end
  local wait, mine = -1, false
  for i = 5, #ARGV do
    local holder = redis.call('hget', lock, ARGV[i])
    holders[i] = holder
    if holder then
      local e = tonumber(redis.call('hget', lock, expire_field(ARGV[i], holder)))
      expiries[i] = e
      if e and e > now then
        if holder ~= owner then
          wait = math.max(wait, e - now)
        else
          mine = true
        end
      end
    end
  end
  if wait >= 0 then
    return {0, wait}
  end
  if mine and reentrant ~= '1' then
    return {2}
  end
end
local until_ms, count = now + lease, nil
for i = 5, #ARGV do
  local v, holder, e = ARGV[i], holders[i], expiries[i]
  local n = 1
  if holder == owner and e and e > now then
    if e < until_ms then -- a re-entry never shortens what an outer hold was promised
      redis.call('hset', lock, expire_field(v, owner), until_ms)
    end
    n = redis.call('hincrby', lock, count_field(v, owner), 1)
  else
    if holder and holder ~= owner then -- its holder's lease ended: its fields go
      redis.call('hdel', lock, expire_field(v, holder), count_field(v, holder))
    end
    -- Free, or owner's own lease of it ended: its count starts anew.
    redis.call('hset', lock, v, owner, expire_field(v, owner), until_ms, count_field(v, owner), 1)
  end
  if not count or n < count then
    count = n
  end
end
lengthen(lock, lease, before)
return remember(memo, {1, count, 0})
