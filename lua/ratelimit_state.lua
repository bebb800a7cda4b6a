--! KEYS limiter value clientvalue permits clientpermits
-- Read a rate limiter without changing it. KEYS as ratelimit_window.lua says.
-- Returns {rate, interval ms, type, keepAliveTime ms, permits left now in the window of its type, the
-- hash's PTTL}, or {} when the limiter is not set, or the refusal of a name that holds anything else.
--! INCLUDE ratelimit_window.lua
local limiter, clientvalue = KEYS[1], KEYS[3]
local rate, interval, keep, value, permits = settings()
if not rate then
  return {}
elseif rate == 'err' then
  return not_limiter()
end
local v = left(rate, interval, value, permits, now_ms(), false)
if v == 'err' then
  return bad_window(value, permits)
end
local kind = 0
if value == clientvalue then
  kind = 1
end
return {rate, interval, kind, keep, v or rate, redis.call('pttl', limiter)}
