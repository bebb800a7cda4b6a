--! KEYS lock writers leases channel memo
--! ARGV field held rid lease publish
-- Release one write hold (rwlock_mode.lua, rwlock_leases.lua). Replies, and exactly once (MODE 1,
-- MODE 2), as rlock_release.lua says. The last one publishes '1' (wake all): the lock
-- is free, or the writer kept reading (downgrade) and readers may join it.
--! INCLUDE rwlock_mode.lua rwlock_leases.lua once.lua answered.lua
local lock, leases, channel, memo = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local field, held, rid, lease, publish = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
memo = memo .. rid
local done, mode = answered(memo, MODE == 1, rwlock_mode, lock)
if done then return mode end
local before = mode == 'write' and tonumber(redis.call('hget', lock, field))
local settled = released(memo, before, held)
if settled then
  return settled
end
local count = redis.call('hincrby', lock, field, -1)
if count > 0 then
  if redis.call('pttl', lock) < tonumber(lease) then -- never shorter than the holds left were promised
    redis.call('pexpire', lock, lease)
  end
  if before ~= held then
    remember(memo, count)
  end
  return count
end
redis.call('hdel', lock, field)
if redis.call('hlen', lock) == 1 then
  redis.call('del', lock)
else
  -- Downgrade: the owner's read holds remain, and the lock now lives as long as their leases.
  redis.call('hset', lock, 'mode', 'read')
  local left = longest_read_lease(lock, leases)
  if left > 0 then
    redis.call('pexpire', lock, left)
  else
    redis.call('del', lock)
  end
end
redis.call(publish, channel, '1')
return 0
