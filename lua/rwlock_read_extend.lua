--! KEYS lock leases memo
--! ARGV field lease rid
-- Extend one read hold of an owner (once.lua comes first; KEYS as rwlock_leases.lua says, the memos'
-- prefix third). Redis does not tell an owner's read holds apart, only their leases
-- ("{N}:OWNER:rwlock_timeout:1..count"): the shortest lease gets at least lease ms from now, so that
-- each hold keeps what it was promised whichever lease it is counted by (rwlock_read_release.lua
-- lets the shortest go first), and the lock lives that long at least. Replies 1, or 0 when the owner
-- holds no read hold, or one of its leases has ended (the renewal reports it lost). Exactly once by
-- its memo, as lock_extend.lua says.
local memo = KEYS[3] .. ARGV[3]
local found, reply = recall(memo)
if found then
  return reply
end
local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not n or n <= 0 then
  return remember(memo, 0)
end
local prefix, ms = KEYS[2] .. ARGV[1] .. ':rwlock_timeout:', tonumber(ARGV[2])
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
if shortest < ms then
  redis.call('pexpire', prefix .. at, ms)
end
if redis.call('pttl', KEYS[1]) < ms then
  redis.call('pexpire', KEYS[1], ms)
end
return remember(memo, 1)
