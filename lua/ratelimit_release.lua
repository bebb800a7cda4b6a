--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV returned rid
-- Give permits back to a rate limiter's window, as Redisson's release. KEYS as ratelimit_window.lua
-- says, and the memos' prefix; returned: the permits. Exactly once by its memo: a release sent again
-- after a lost answer must not give the permits back twice.
-- Redisson's rule: the value (the rate when the window has none yet) grows by the permits, never above
-- the rate; the grants stay in the window, and the keys take the keep-alive rule of an acquisition.
-- Returns {1, the permits left}, or {-2} when the limiter is not set (nothing changed). A key that is
-- not a rate limiter, a value that is not a number, or grants of another type, is refused (refuse.lua)
-- before any write.
--! INCLUDE ratelimit_window.lua once.lua
local memo = KEYS[6]
local returned, rid = tonumber(ARGV[1]), ARGV[2]
memo = memo .. rid
local found, reply = recall(memo)
if found then return reply end
local rate, _, keep, value, permits = settings()
if not rate then
  return remember(memo, {-2})
elseif rate == 'err' then
  return not_limiter()
end
-- The grants are read too, though a release writes none: the keep-alive would expire them.
local v = redis.pcall('get', value)
if type(v) == 'table' or (v and not tonumber(v)) or type(redis.pcall('zcard', permits)) == 'table' then
  return bad_window(value, permits)
end
v = tonumber(v) or rate
v = math.min(rate, v + returned)
redis.call('set', value, v)
keep_alive(keep, value, permits)
return remember(memo, {1, v})
