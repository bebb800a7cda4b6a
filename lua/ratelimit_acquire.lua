--! KEYS limiter value clientvalue permits clientpermits
--! ARGV wanted member
-- Take permits from a rate limiter's window, by the server's clock. KEYS as ratelimit_window.lua
-- says; wanted: the permits wanted; member: the grant's (its random id and the permits, packed as
-- Redisson packs them), the same for every try of one acquisition.
-- Exactly once (core/once.go): a try sent again after a lost answer (MODE 1) finds its grant in the
-- window, if the first send made it and it has not left the window since (then this acquisition
-- is charged anew, now: its first charge was spent without it).
-- Returns {1, now} when taken (now: the grant's time in ms), {0, ms} when too few are left: ms until
-- enough grants leave the window, {-1, rate} when more than the rate are wanted, {-2} when the
-- limiter is not set.
--! INCLUDE ratelimit_window.lua
local wanted, member = tonumber(ARGV[1]), ARGV[2]
local rate, interval, keep, value, permits = settings()
if not rate then
  return {-2}
elseif rate == 'err' then
  return not_limiter()
end
if MODE ~= 2 then -- another send of this call may have run first, a held-up first send last
  local at = redis.call('zscore', permits, member)
  if at then
    return {1, tonumber(at)}
  end
end
if wanted > rate then
  return {-1, rate}
end
local now = now_ms()
local v = left(rate, interval, value, permits, now, true)
if v == 'err' then
  return bad_window(value, permits)
end
local wait, fresh = nil, false
if not v then
  v, fresh = rate, true
elseif v < wanted then
  -- Every grant holds a permit at least: the oldest wanted - v grants free enough, if any do.
  local grants = redis.call('zrange', permits, 0, wanted - v - 1, 'withscores')
  if #grants == 0 then
    v, fresh = rate, true -- nothing is in the window, so all of it is left (a value changed by hand)
  else
    local freed = 0
    for i = 1, #grants, 2 do
      freed = freed + (permits_of(grants[i]) or 0)
      wait = tonumber(grants[i + 1]) + interval - now
      if v + freed >= wanted then
        break
      end
    end
  end
end
if not wait then
  -- ZADD first: it is the write that can still fail (WRONGTYPE), and must fail before any other.
  redis.call('zadd', permits, now, member)
  if fresh then
    redis.call('set', value, v - wanted)
  else
    redis.call('decrby', value, wanted)
  end
end
keep_alive(keep, value, permits)
if wait then
  return {0, wait}
end
return {1, now}
