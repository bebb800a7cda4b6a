--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV rate interval type keepalive how rid keep
-- Set a rate limiter's rate (ratelimit_window.lua and once.lua come first), as Redisson's trySetRate,
-- setRate and updateRate. KEYS as ratelimit_window.lua, and KEYS[6] the memos' prefix; ARGV[1] rate,
-- ARGV[2] interval ms, ARGV[3] type ('0' OVERALL, '1' PER_CLIENT), ARGV[4] keepAliveTime ms, ARGV[5]
-- 'try' (set it only when the limiter is not set), 'set' (set it in any case) or 'update' (change it
-- only when the limiter is set), ARGV[6] the call's request id, ARGV[7] '1' to keep the window's state
-- (Redisson's keepState) with 'set' and 'update'. Exactly once by its memo: a setRate sent again after
-- a lost answer must not empty the window a second time.
--
-- Redisson's rules for 'set' and 'update': the hash gets the four fields, and PEXPIRE by keepAliveTime
-- when > 0 (else it keeps any TTL it had). A change of type empties every window (both types', this
-- client's); otherwise, without keepState, the window of the type set is emptied. With keepState the
-- grants older than the new interval leave the window, and the value becomes the new rate minus the
-- permits of the grants left, 0 when they hold more; the keys then take the keep-alive rule of an
-- acquisition.
-- Returns 1 when it set the rate, 0 when 'try' found the limiter set or 'update' found it not set. A
-- key that is not a rate limiter, or a window key that holds something else, is refused (refuse.lua)
-- before anything is written.
local memo = KEYS[6] .. ARGV[6]
local found, reply = recall(memo)
if found then
  return reply
end
local rate = limiter()
if rate == 'err' then
  return not_limiter()
end
local how = ARGV[5]
if how == 'try' then
  redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
  redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
  redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4]) -- adds it to a limiter of an older Redisson
  local set = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
  if set == 1 and tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
  end
  return remember(memo, set)
end
if how == 'update' and not rate then
  return remember(memo, 0)
end
--! INCLUDE ratelimit_windows.lua
local refused = foreign_window()
if refused then
  return refused
end

local old = redis.call('hget', KEYS[1], 'type')
local value, permits = KEYS[2], KEYS[4]
if ARGV[3] == '1' then
  value, permits = KEYS[3], KEYS[5]
end
local changed = old and old ~= ARGV[3]
local newrate, interval, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
-- The window kept: read before any write, so that a key of another type is refused with nothing
-- changed (GET and ZRANGEBYSCORE raise WRONGTYPE themselves).
local now, used
if ARGV[7] == '1' and not changed then
  local v = redis.call('get', value)
  if v and not tonumber(v) then
    return bad_window(value, permits)
  end
  now = now_ms()
  used = sum_permits(redis.call('zrangebyscore', permits, '(' .. (now - interval), '+inf'))
  if not used then
    return bad_window(value, permits)
  end
end

redis.call('hset', KEYS[1], 'rate', ARGV[1], 'interval', ARGV[2], 'type', ARGV[3], 'keepAliveTime', ARGV[4])
if keep > 0 then
  redis.call('pexpire', KEYS[1], keep)
end
if changed then
  redis.call('del', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
elseif not used then
  redis.call('del', value, permits)
else
  redis.call('zremrangebyscore', permits, 0, now - interval)
  redis.call('set', value, math.max(0, newrate - used))
  keep_alive(keep, value, permits)
end
return remember(memo, 1)
