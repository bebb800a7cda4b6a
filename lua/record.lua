-- Shared by the tries that record their waiter (rlock_acquire.lua, semaphore_acquire.lua).
--
-- record(waiters, clients, member, window, client, linger): records a waiter that will try again
-- within window ms, scored by that time in microseconds (waiters recorded within one millisecond keep
-- their order; a tie would go to the smaller member, the same client every time), and its client as
-- listening for linger ms after that (linger '': the client listed itself recently enough, and is
-- not listed again). Returns the score.
local function record(waiters, clients, member, window, client, linger)
  local t = redis.call('time')
  window = tonumber(window)
  -- Formatted here: Lua would round a score in microseconds to 14 digits.
  local score = string.format('%.0f', (t[1] * 1000000 + t[2]) + window * 1000)
  redis.call('zadd', waiters, score, member)
  if redis.call('pttl', waiters) < window then
    redis.call('pexpire', waiters, window)
  end
  if linger ~= '' then
    local keep = window + tonumber(linger)
    redis.call('zadd', clients, t[1] * 1000 + math.floor(t[2] / 1000) + keep, client)
    redis.call('pexpire', clients, keep)
  end
  return tonumber(score)
end
