--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV rate interval type keepalive only rid
-- Set a rate limiter's rate (ratelimit_window.lua and once.lua come first), as Redisson's trySetRate
-- and setRate. KEYS as ratelimit_window.lua, and KEYS[6] the memos' prefix; ARGV[1] rate, ARGV[2]
-- interval ms, ARGV[3] type ('0' OVERALL, '1' PER_CLIENT), ARGV[4] keepAliveTime ms, ARGV[5] '1' to
-- set it only when the limiter is not set, ARGV[6] the call's request id. Exactly once by its memo:
-- a setRate sent again after a lost answer must not empty the window a second time.
-- Returns 1 when it set the rate, 0 when ARGV[5] is '1' and the limiter was set already. A key that is
-- not a rate limiter is refused (WRONGTYPE) and left unchanged.
local memo = KEYS[6] .. ARGV[6]
local found, reply = recall(memo)
if found then
  return reply
end
local rate = limiter()
if rate == 'err' then
  return redis.error_reply(not_limiter)
end
if ARGV[5] == '1' then
  redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
  redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
  redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4]) -- adds it to a limiter of an older Redisson
  local set = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
  if set == 1 and tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  return remember(memo, set)
end
redis.call('hset', KEYS[1], 'rate', ARGV[1], 'interval', ARGV[2], 'type', ARGV[3], 'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
-- The new rate starts with a full window: the one of the type set is emptied.
if ARGV[3] == '1' then
  redis.call('del', KEYS[3], KEYS[5])
else
  redis.call('del', KEYS[2], KEYS[4])
end
return remember(memo, 1)
