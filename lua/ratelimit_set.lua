--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV rate interval kind keepalive how rid keep
-- Set a rate limiter's rate, as Redisson's trySetRate, setRate and updateRate. KEYS as
-- ratelimit_window.lua says, and the memos' prefix; interval in ms; kind: its type ('0' OVERALL, '1'
-- PER_CLIENT); keepalive: keepAliveTime in ms; how: 'try' (set it only when the limiter is not set),
-- 'set' (set it in any case) or 'update' (change it only when the limiter is set); keep: '1' to keep
-- the window's state (Redisson's keepState) with 'set' and 'update'. Exactly once by its memo: a
-- setRate sent again after a lost answer must not empty the window a second time.
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
--! INCLUDE ratelimit_window.lua ratelimit_windows.lua once.lua
local limiter, value, clientvalue, permits, clientpermits, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rate, interval, kind, keepalive, how, rid, keep = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
local was = settings()
if was == 'err' then
  return not_limiter()
end
if how == 'try' then
  redis.call('hsetnx', limiter, 'rate', rate)
  redis.call('hsetnx', limiter, 'interval', interval)
  redis.call('hsetnx', limiter, 'keepAliveTime', keepalive) -- adds it to a limiter of an older Redisson
  local set = redis.call('hsetnx', limiter, 'type', kind)
  if set == 1 and tonumber(keepalive) > 0 then
    redis.call('pexpire', limiter, keepalive)
  end
  return remember(memo, set)
end
if how == 'update' and not was then
  return remember(memo, 0)
end
local refused = foreign_window()
if refused then
  return refused
end

local old = redis.call('hget', limiter, 'type')
local window, grants = value, permits
if kind == '1' then
  window, grants = clientvalue, clientpermits
end
local changed = old and old ~= kind
local ms = tonumber(interval)
-- The window kept: read before any write, so that a key of another type is refused with nothing
-- changed (GET and ZRANGEBYSCORE raise WRONGTYPE themselves).
local now, used
if keep == '1' and not changed then
  local v = redis.call('get', window)
  if v and not tonumber(v) then
    return bad_window(window, grants)
  end
  now = now_ms()
  used = sum_permits(redis.call('zrangebyscore', grants, '(' .. (now - ms), '+inf'))
  if not used then
    return bad_window(window, grants)
  end
end

redis.call('hset', limiter, 'rate', rate, 'interval', interval, 'type', kind, 'keepAliveTime', keepalive)
if tonumber(keepalive) > 0 then
  redis.call('pexpire', limiter, keepalive)
end
if changed then
  redis.call('del', value, clientvalue, permits, clientpermits)
elseif not used then
  redis.call('del', window, grants)
else
  redis.call('zremrangebyscore', grants, 0, now - ms)
  redis.call('set', window, math.max(0, tonumber(rate) - used))
  keep_alive(tonumber(keepalive), window, grants)
end
return remember(memo, 1)
