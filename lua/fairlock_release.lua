--! KEYS lock queue deadlines counter channel records memo
--! ARGV field held rid lease publish slot numsub
-- Release one hold of a fair lock; the last release wakes the first waiter that is still there, or
-- hands it the lock (fairlock_wake.lua comes first). Replies, and exactly once (MODE 1, MODE 2), as
-- rlock_release.lua says; so does the refusal of a name that holds anything but a lock hash.
local held, memo = tonumber(ARGV[2]), KEYS[7] .. ARGV[3]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
local before = redis.pcall('hget', KEYS[1], ARGV[1])
if type(before) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1], nil, before.err)
end
before = tonumber(before)
if not before and redis.call('exists', KEYS[1]) == 1 then
  --! INCLUDE lockhash.lua
  local _, refused = hold_count(KEYS[1], ARGV[1])
  if refused then
    return refused
  end
end
if MODE == 2 then
  local m = redis.call('get', memo)
  if m == 'undone' or (not m and before ~= held) then
    return -3
  end
  redis.call('set', memo, 'undone', 'px', 60000)
end
if not before then
  if MODE == 1 and held == 1 then return 0 end -- the first send released the last hold
  return -1
end
if MODE ~= 2 and before == held - 1 then
  return before -- the first send released it
end
local count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if count > 0 then
  extend(KEYS[1], ARGV[4]) -- the holds left keep at least what they were promised
  if before ~= held and MODE ~= 2 then
    redis.call('set', memo, count, 'px', 60000)
  end
  return count
end
redis.call('del', KEYS[1])
redis.pcall('hdel', KEYS[6], ARGV[1]) -- the mark of the grant this hold may have come from (records of another type: left alone)
wake(tonumber(ARGV[6]), ARGV[5], ARGV[7])
return 0
