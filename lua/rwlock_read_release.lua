--! KEYS lock writers leases channel memo
--! ARGV field held rid publish
-- Release one read hold (rwlock_mode.lua, rwlock_leases.lua). Replies, and exactly once (MODE 1,
-- MODE 2), as rlock_release.lua says. When the last live read hold goes, the lock is
-- deleted and the channel gets '0' (wake one), or '1' (wake all) when writers announced themselves,
-- so that the readers they keep out do not swallow the wake-up.
--! INCLUDE rwlock_mode.lua rwlock_leases.lua once.lua answered.lua
local lock, writers, leases, channel, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local field, held, rid, publish = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
memo = memo .. rid
local done, mode = answered(memo, MODE == 1, rwlock_mode, lock)
if done then return mode end
local count = mode and tonumber(redis.call('hget', lock, field))
if count and count <= 0 then
  count = nil
end
local settled = released(memo, count, held)
if settled then
  return settled
end
local before = count
count = redis.call('hincrby', lock, field, -1)
-- The owner's read holds are not told apart, their leases are: the shortest lease goes, so that the
-- holds left keep the longest (each what it was promised, however leases were mixed), and the leases
-- stay numbered 1..count, as Redisson numbers them.
local prefix = leases .. field .. ':rwlock_timeout:'
local top = redis.call('pttl', prefix .. (count + 1))
local shortest, at = top, count + 1
for k = 1, count do
  local left = redis.call('pttl', prefix .. k)
  if left < shortest then
    shortest, at = left, k
  end
end
if at <= count and top > 0 then
  redis.call('set', prefix .. at, 1, 'px', top)
end
redis.call('del', prefix .. (count + 1))
if count == 0 then
  redis.call('hdel', lock, field)
end
if mode == 'read' then
  local left = longest_read_lease(lock, leases)
  if left > 0 then
    redis.call('pexpire', lock, left)
  else
    redis.call('del', lock)
    local msg = '0'
    if redis.call('exists', writers) == 1 then
      msg = '1'
    end
    redis.call(publish, channel, msg)
    count = 0
  end
end
-- In write mode the reader is the writer itself (downgrade), and the write lease governs the lock.
if count > 0 and before ~= held then
  remember(memo, count)
end
return count
