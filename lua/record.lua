-- Shared by the tries that record their waiter (rlock_acquire.lua, semaphore_acquire.lua).
--
-- record(waiters, clients, member, window, client, linger, lease): records a waiter that will try
-- again within window ms, scored by that time in microseconds (waiters recorded within one
-- millisecond keep their order; a tie would go to the smaller member, the same client every time),
-- and its client as listening for linger ms after that (linger '': the client listed itself recently
-- enough, and is not listed again). Returns the score, or nil and the refusal (refuse.lua) when a
-- record key holds another type: the client's listing, written first, is then all that changed.
-- The records last at least window + lease ms (lease: of what a release may hand the waiter, or
-- nil): a grant's mark among them then outlives the grant, with no expiry of its own to set.
local function record(waiters, clients, member, window, client, linger, lease)
  local t = redis.call('time')
  window = tonumber(window)
  if linger ~= '' then
    local keep = window + tonumber(linger)
    local failed = redis.pcall('zadd', clients, t[1] * 1000 + math.floor(t[2] / 1000) + keep, client)
    if type(failed) == 'table' then
      --! INCLUDE refuse.lua
      return nil, refuse(clients, nil, failed.err)
    end
    redis.call('pexpire', clients, keep)
  end
  -- Formatted here: Lua would round a score in microseconds to 14 digits.
  local score = string.format('%.0f', (t[1] * 1000000 + t[2]) + window * 1000)
  local failed = redis.pcall('zadd', waiters, score, member)
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return nil, refuse(waiters, nil, failed.err)
  end
  local keep = window + (tonumber(lease) or 0)
  if redis.call('pttl', waiters) < keep then
    redis.call('pexpire', waiters, keep)
  end
  return tonumber(score)
end
