--! KEYS limiter value clientvalue permits clientpermits
--! ARGV member returned
-- Give back a grant that its acquirer may not keep (its caller left while the acquisition ran, or the
-- replicas did not acknowledge it). KEYS as ratelimit_window.lua says; member: the grant's; returned:
-- its permits. Returns 1 when the grant was still in the window, else 0 (nothing changed).
--! INCLUDE ratelimit_window.lua
local member, returned = ARGV[1], tonumber(ARGV[2])
local rate, _, _, value, permits = settings()
if not rate or rate == 'err' then
  return 0
end
if redis.call('zrem', permits, member) == 0 then
  return 0
end
local v = tonumber(redis.call('get', value))
if v then
  redis.call('set', value, math.min(rate, v + returned), 'keepttl')
end
return 1
