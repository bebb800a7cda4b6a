-- Release one write hold.
-- KEYS as rwlock_leases.lua says, which comes first.
-- ARGV[1] write field, ARGV[2] publish command, ARGV[3] latch ttl ms, ARGV[4] lease ms, ARGV[5] '1'
-- when this request was sent before (a network error hid the answer)
-- Returns the write holds the owner keeps, -1 when it held none, or -2 when a re-sent request finds
-- none. The last one publishes '1'
-- (wake all): the lock is free, or the writer kept reading (downgrade) and readers may join it. A
-- re-sent request answers as the first did, as rlock_release.lua explains: only a release that
-- leaves write holds writes the latch.
local resent = ARGV[5] == '1'
if resent then
  local done = redis.call('get', KEYS[6])
  if done then return tonumber(done) end
end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  if resent then return -2 end
  return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if count > 0 then
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[4]) then -- never shorter than the holds left were promised
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  redis.call('set', KEYS[6], count, 'px', ARGV[3])
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
