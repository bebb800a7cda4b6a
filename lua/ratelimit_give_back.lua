-- Give back a grant that its acquirer may not keep (its caller left while the acquisition ran, or the
-- replicas did not acknowledge it); ratelimit_window.lua comes first.
-- KEYS as ratelimit_window.lua; ARGV[1] the grant's member, ARGV[2] its permits.
-- Returns 1 when the grant was still in the window, else 0 (nothing changed).
local rate, interval, keep, value, permits = limiter()
if not rate or rate == 'err' then
  return 0
end
if redis.call('zrem', permits, ARGV[1]) == 0 then
  return 0
end
local v = tonumber(redis.call('get', value))
if v then
  redis.call('set', value, math.min(rate, v + tonumber(ARGV[2])), 'keepttl')
end
return 1
