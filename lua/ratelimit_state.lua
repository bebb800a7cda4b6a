-- Read a rate limiter without changing it (ratelimit_window.lua comes first).
-- KEYS as ratelimit_window.lua.
-- Returns {rate, interval ms, type, keepAliveTime ms, permits left now in the window of its type}, or
-- {} when the limiter is not set.
local rate, interval, keep, value, permits = limiter()
if not rate then
  return {}
elseif rate == 'err' then
  return redis.error_reply(not_limiter)
end
local v = left(rate, interval, value, permits, now_ms(), false)
if v == 'err' then
  return redis.error_reply(bad_window)
end
local kind = 0
if value == KEYS[3] then
  kind = 1
end
return {rate, interval, kind, keep, v or rate}
