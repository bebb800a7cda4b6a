-- Shared by the batch renewals (rlock_renew.lua, rwlock_read_renew.lua, grouplock_renew.lua).
--
-- renew_holds(n, ttl, renew): the batch's reply, one integer per hold i = 1..n: 1 when renew(i) says
-- hold i is still held (and has renewed it for ttl ms, unless ttl is 0: the holds are checked, not
-- renewed), 0 when it is no longer held. renew reads with redis.pcall: a key of the wrong type
-- counts as not held instead of failing the whole batch.
local function renew_holds(n, ttl, renew)
  local out = {}
  for i = 1, n do
    out[i] = renew(i) and 1 or 0
  end
  return out
end
