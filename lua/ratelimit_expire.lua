--! KEYS limiter value clientvalue permits clientpermits memo
--! ARGV ms rid
-- Set or clear the expiry of a rate limiter's keys, as Redisson's expire and clearExpire do: the
-- hash, the OVERALL window and this client's PER_CLIENT window, whichever exist. KEYS as
-- ratelimit_window.lua says, and the memos' prefix; ms: the time to live, or '' to clear it
-- (PERSIST). Exactly once by its memo: a call sent again after a lost answer answers the first send's
-- answer (a second PERSIST would find nothing to clear) and leaves the first send's expiry.
-- Returns 1 when a key got the TTL (or lost its TTL), else 0. A key that is not a rate limiter is
-- refused (refuse.lua) and left unchanged.
--! INCLUDE ratelimit_window.lua ratelimit_windows.lua once.lua answered.lua
local limiter, value, clientvalue, permits, clientpermits, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local ms, rid = ARGV[1], ARGV[2]
memo = memo .. rid
local done, reply = answered(memo, true, whole_limiter)
if done then return reply end
local done = 0
for _, key in ipairs({limiter, value, clientvalue, permits, clientpermits}) do
  local r
  if ms == '' then
    r = redis.call('persist', key)
  else
    r = redis.call('pexpire', key, ms)
  end
  if r == 1 then
    done = 1
  end
end
return remember(memo, done)
