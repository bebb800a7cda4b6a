--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV rid
-- Delete a rate limiter: its hash, the OVERALL window and this client's PER_CLIENT window (Redisson's
-- delete). KEYS as ratelimit_window.lua says, and the memos' prefix; exactly once by its memo.
-- Returns 1 when the limiter was set, 0 when it was not. A key that is not a rate limiter is refused
-- (WRONGTYPE) and left in place.
--! INCLUDE ratelimit_window.lua ratelimit_windows.lua once.lua answered.lua
local limiter, value, clientvalue, permits, clientpermits, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rid = ARGV[1]
memo = memo .. rid
local done, rate = answered(memo, true, whole_limiter)
if done then return rate end
redis.call('del', limiter, value, clientvalue, permits, clientpermits)
if rate then
  return remember(memo, 1)
end
return remember(memo, 0)
