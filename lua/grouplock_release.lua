--! KEYS lock channel memo
--! ARGV owner held rid lease publish tail
-- Release one hold of a group lock: every value of the tail (grouplock.lua). A value
-- whose count reaches 0 loses its three fields, and then Redisson's unlock message '0' goes out on
-- the group's channel; the others keep their lease, lengthened to lease from now. Replies as
-- core/lock.go says: what the owner keeps of the hold (0: released), or -1 when it held nothing, or
-- not every value (what it still held is released all the same, and what it kept of the others goes).
--
-- Exactly once (core/once.go): held is how many holds the client counts for the owner, and nothing
-- changes them until it has the answer. Re-sent (MODE 1), the release answers the memo if the first
-- send kept one, or finds by the counts that the first send released (held - 1 left on every value,
-- or none when held was 1) before it releases. The counts tell only when each value was counted held
-- before the first send; a release that finds another count (a value also held by another hold of the
-- owner, over another value set) or a value not held keeps its answer under the memo.
-- MODE 2 gives back an acquisition whose answer never came, under that acquisition's rid: it took
-- effect if it kept its memo (grouplock_acquire.lua keeps one always), which then says 'undone', so
-- that a give-back sent again gives back nothing more (once.lua's undone).
--! INCLUDE grouplock.lua once.lua
local lock, channel, memo = KEYS[1], KEYS[2], KEYS[3]
local owner, held, rid, lease, publish = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5]
memo = memo .. rid
if MODE == 1 then
  local found, reply = recall(memo)
  if found then return reply end
end
if undone(memo) then
  return -3
end
local now, before = now_ms(), redis.call('pttl', lock)
local counts, live, all, same = {}, 0, true, true
for i = 6, #ARGV do
  local n = before ~= -2 and live_count(lock, ARGV[i], owner, now)
  counts[i] = n
  if n then
    live = live + 1
    same = same and n == held
  else
    all = false
  end
end
if live == 0 then
  local refused = before ~= -2 and foreign(lock)
  if refused then
    return refused
  end
  for i = 6, #ARGV do
    forget(lock, ARGV[i], owner)
  end
  if MODE == 1 and held == 1 then
    return 0 -- the first send released the last hold
  end
  return -1
end
if MODE ~= 2 and all then -- a first send held up may come after the one made again
  local released = true
  for i = 6, #ARGV do
    released = released and counts[i] == held - 1
  end
  if released then
    return held - 1 -- the first send released it
  end
end
local until_ms, left, freed = now + lease, 0, false
for i = 6, #ARGV do
  local v, n = ARGV[i], counts[i]
  if not n then
    forget(lock, v, owner)
  elseif n <= 1 then
    redis.call('hdel', lock, v, expire_field(v, owner), count_field(v, owner))
    freed = true
  else
    redis.call('hincrby', lock, count_field(v, owner), -1)
    local ef = expire_field(v, owner)
    if tonumber(redis.call('hget', lock, ef)) < until_ms then
      redis.call('hset', lock, ef, until_ms)
    end
    left = math.max(left, n - 1)
  end
end
if freed then
  redis.call(publish, channel, '0')
end
if left > 0 then
  lengthen(lock, lease, before)
end
local reply = left
if not all then
  reply = -1
elseif left > held - 1 and held > 0 then
  reply = held - 1 -- another hold of the owner keeps the rest; the client counts this one's
end
if not (all and same) then
  remember(memo, reply)
end
return reply
