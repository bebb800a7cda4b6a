--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV rid
-- Delete a rate limiter: its hash, the OVERALL window and this client's PER_CLIENT window (Redisson's
-- delete); ratelimit_window.lua and once.lua come first. KEYS as ratelimit_window.lua, and KEYS[6]
-- the memos' prefix; exactly once by its memo.
-- Returns 1 when the limiter was set, 0 when it was not. A key that is not a rate limiter is refused
-- (WRONGTYPE) and left in place.
local memo = KEYS[6] .. ARGV[1]
local found, reply = recall(memo)
if found then
  return reply
end
local rate = limiter()
if rate == 'err' then
  return not_limiter()
end
--! INCLUDE ratelimit_windows.lua
local refused = foreign_window()
if refused then
  return refused
end
redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
if rate then
  return remember(memo, 1)
end
return remember(memo, 0)
