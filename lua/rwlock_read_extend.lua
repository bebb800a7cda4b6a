--! KEYS lock leases memo
--! ARGV field lease rid
-- Extend one read hold of an owner (rwlock_mode.lua; leases as rwlock_leases.lua says). Redis does
-- not tell an owner's read holds apart, only their leases ("{N}:OWNER:rwlock_timeout:1..count"): the
-- shortest lease gets at least lease ms from now, so that each hold keeps what it was promised
-- whichever lease it is counted by (rwlock_read_release.lua lets the shortest go first), and the lock
-- lives that long at least. Replies 1, or 0 when the owner holds no read hold, or one of its leases
-- has ended (the renewal reports it lost). Exactly once by its memo, as hold_extend.lua says. A name
-- that holds anything but a read-write lock is refused before anything is written.
--! INCLUDE rwlock_mode.lua once.lua answered.lua
local lock, leases, memo = KEYS[1], KEYS[2], KEYS[3]
local field, lease, rid = ARGV[1], tonumber(ARGV[2]), ARGV[3]
memo = memo .. rid
local done, mode = answered(memo, true, rwlock_mode, lock)
if done then return mode end
local n = mode and tonumber(redis.call('hget', lock, field))
if not n or n <= 0 then
  return remember(memo, 0)
end
local prefix = leases .. field .. ':rwlock_timeout:'
local shortest, at
for k = 1, n do
  local left = redis.call('pttl', prefix .. k)
  if left == -2 then
    return remember(memo, 0)
  end
  if not shortest or left < shortest then
    shortest, at = left, k
  end
end
if shortest < lease then
  redis.call('pexpire', prefix .. at, lease)
end
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return remember(memo, 1)
