--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV ms rid
-- Set or clear the expiry of a rate limiter's keys, as Redisson's expire and clearExpire do
-- (ratelimit_window.lua and once.lua come first): the hash, the OVERALL window and this client's
-- PER_CLIENT window, whichever exist. KEYS as ratelimit_window.lua, and KEYS[6] the memos' prefix;
-- ARGV[1] the time to live in ms, or '' to clear it (PERSIST); ARGV[2] the call's request id. Exactly
-- once by its memo: a call sent again after a lost answer answers the first send's answer (a second
-- PERSIST would find nothing to clear) and leaves the first send's expiry.
-- Returns 1 when a key got the TTL (or lost its TTL), else 0. A key that is not a rate limiter is
-- refused (refuse.lua) and left unchanged.
local memo = KEYS[6] .. ARGV[2]
local found, reply = recall(memo)
if found then
  return reply
end
if limiter() == 'err' then
  return not_limiter()
end
--! INCLUDE ratelimit_windows.lua
local refused = foreign_window()
if refused then
  return refused
end
local done = 0
for i = 1, 5 do
  local r
  if ARGV[1] == '' then
    r = redis.call('persist', KEYS[i])
  else
    r = redis.call('pexpire', KEYS[i], ARGV[1])
  end
  if r == 1 then
    done = 1
  end
end
return remember(memo, done)
