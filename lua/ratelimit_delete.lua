-- Delete a rate limiter: its hash, the OVERALL window and this client's PER_CLIENT window (Redisson's
-- delete); ratelimit_window.lua comes first. KEYS as ratelimit_window.lua.
-- Returns 1 when the limiter was set, 0 when it was not. A key that is not a rate limiter is refused
-- (WRONGTYPE) and left in place.
local rate = limiter()
if rate == 'err' then
  return redis.error_reply(not_limiter)
end
redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
if rate then
  return 1
end
return 0
