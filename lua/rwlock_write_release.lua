-- Release one write hold.
-- KEYS as rwlock_leases.lua says, which comes first.
-- ARGV[1] write field, ARGV[2] publish command, ARGV[3] latch ttl ms, ARGV[4] lease ms, ARGV[5] the
-- write holds the client counts ('0': unknown), ARGV[6] '1' when this request was sent before (a
-- network error hid the answer)
-- Returns the write holds the owner keeps, -1 when it held none, or -2 when a re-sent request finds
-- none. The last one publishes '1'
-- (wake all): the lock is free, or the writer kept reading (downgrade) and readers may join it. A
-- re-sent request never releases twice, as rlock_release.lua explains.
local resent, held = ARGV[6] == '1', tonumber(ARGV[5])
if resent then
  local done = redis.call('get', KEYS[6])
  if done then return tonumber(done) end
end
local before = redis.call('hget', KEYS[1], 'mode') == 'write' and tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not before then
  if resent then return -2 end
  return -1
end
if resent and before == held - 1 then
  return before -- the first send released it
end
local count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if count > 0 then
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[4]) then -- never shorter than the holds left were promised
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  if before ~= held then
    redis.call('set', KEYS[6], count, 'px', ARGV[3])
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
redis.call(ARGV[2], KEYS[4], '1')
return 0
