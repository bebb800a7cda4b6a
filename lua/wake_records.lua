-- Shared by the scripts that hand objects to recorded waiters (rlock_wake.lua, semaphore_wake.lua).
--
-- drop_expired(waiters, clients): removes the waiter records whose score (in microseconds) has passed
-- (their waiter would have tried again by then: it has gone) and the clients no longer listening by
-- now (score in milliseconds).
local function drop_expired(waiters, clients)
  local t = redis.call('time')
  redis.call('zremrangebyscore', waiters, '-inf', string.format('%.0f', t[1] * 1000000 + t[2]))
  redis.call('zremrangebyscore', clients, '-inf', t[1] * 1000 + math.floor(t[2] / 1000))
end
--
-- drop_client(waiters, clients, client): client no longer listens on its wake channel (it closed, or
-- is still subscribing: then it tries again once subscribed). Its records would only absorb
-- hand-overs: remove them, and the client.
local function drop_client(waiters, clients, client)
  redis.call('zrem', clients, client)
  for _, r in ipairs(redis.call('zrange', waiters, 0, -1)) do
    if string.sub(r, 1, #client + 1) == client .. ':' then
      redis.call('zrem', waiters, r)
    end
  end
end
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
