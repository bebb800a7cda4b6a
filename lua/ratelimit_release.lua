--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV permits rid
-- Give permits back to a rate limiter's window, as Redisson's release (ratelimit_window.lua and
-- once.lua come first). KEYS as ratelimit_window.lua, and KEYS[6] the memos' prefix; ARGV[1] the
-- permits, ARGV[2] the call's request id. Exactly once by its memo: a release sent again after a lost
-- answer must not give the permits back twice.
-- Redisson's rule: the value (the rate when the window has none yet) grows by the permits, never above
-- the rate; the grants stay in the window, and the keys take the keep-alive rule of an acquisition.
-- Returns {1, the permits left}, or {-2} when the limiter is not set (nothing changed). A key that is
-- not a rate limiter, or a value that is not a number, is refused (refuse.lua) before any write.
local memo = KEYS[6] .. ARGV[2]
local found, reply = recall(memo)
if found then
  return reply
end
local rate, interval, keep, value, permits = limiter()
if not rate then
  return remember(memo, {-2})
elseif rate == 'err' then
  return not_limiter()
end
local v = redis.call('get', value)
if v then
  v = tonumber(v)
  if not v then
    return bad_window(value, permits)
  end
else
  v = rate
end
v = math.min(rate, v + tonumber(ARGV[1]))
redis.call('set', value, v)
keep_alive(keep, value, permits)
return remember(memo, {1, v})
