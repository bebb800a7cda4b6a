--! KEYS lock writers leases channel memo
--! ARGV field held rid lease publish
-- Release one write hold (rwlock_leases.lua comes first). Replies, and exactly once (MODE 1,
-- MODE 2), as rlock_release.lua says. The last one publishes '1' (wake all): the lock is free, or
-- the writer kept reading (downgrade) and readers may join it.
local held, memo = tonumber(ARGV[2]), KEYS[5] .. ARGV[3]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
local mode = redis.pcall('hget', KEYS[1], 'mode')
if type(mode) == 'table' or (mode and mode ~= 'read' and mode ~= 'write') or (not mode and redis.call('exists', KEYS[1]) == 1) then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1]) -- no read-write lock
end
local before = mode == 'write' and tonumber(redis.call('hget', KEYS[1], ARGV[1]))
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
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[4]) then -- never shorter than the holds left were promised
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  if before ~= held and MODE ~= 2 then
    redis.call('set', memo, count, 'px', 60000)
  end
  return count
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
else
  -- Downgrade: the owner's read holds remain, and the lock now lives as long as their leases.
  redis.call('hset', KEYS[1], 'mode', 'read')
  local left = longest_read_lease()
  if left > 0 then
    redis.call('pexpire', KEYS[1], left)
  else
    redis.call('del', KEYS[1])
  end
end
redis.call(ARGV[5], KEYS[4], '1')
return 0
