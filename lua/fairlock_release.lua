--! KEYS lock queue deadlines counter channel records memo
--! ARGV field held rid lease publish slot numsub
-- Release one hold of a fair lock; the last release wakes the first waiter that is still there, or
-- hands it the lock (fairlock_wake.lua). Replies, and exactly once (MODE 1, MODE 2), as
-- rlock_release.lua says; so does the refusal of a name that holds anything but a lock hash.
--! INCLUDE extend.lua fairlock_wake.lua once.lua release.lua
local lock, records, memo = KEYS[1], KEYS[6], KEYS[7]
local field, held, rid, lease, publish, slot, numsub = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
memo = memo .. rid
if MODE == 1 then
  local found, reply = recall(memo)
  if found then return reply end
end
local before = redis.pcall('hget', lock, field)
if type(before) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(lock, nil, before.err)
end
before = tonumber(before)
local answer = settled(memo, lock, before, held)
if answer then return answer end
if before > 1 then
  local count = redis.call('hincrby', lock, field, -1)
  extend(lock, lease) -- the holds left keep at least what they were promised
  if before ~= held then
    remember(memo, count)
  end
  return count
end
redis.call('del', lock)
redis.pcall('hdel', records, field) -- the mark of the grant this hold may have come from (records of another type: left alone)
wake(slot, publish, numsub)
return 0
