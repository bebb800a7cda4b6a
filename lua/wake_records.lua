-- Shared by the scripts that hand objects to recorded waiters (rlock_wake.lua, semaphore_wake.lua);
-- record.lua records a waiter.
--
-- drop_expired(waiters, clients): removes the waiter records whose score (in microseconds) has passed
-- (their waiter would have tried again by then: it has gone) and the clients no longer listening by
-- now (score in milliseconds). A clients record of another type is left alone (pcall): a release
-- that wakes goes on without it.
local function drop_expired(waiters, clients)
  local t = redis.call('time')
  redis.call('zremrangebyscore', waiters, '-inf', string.format('%.0f', t[1] * 1000000 + t[2]))
  redis.pcall('zremrangebyscore', clients, '-inf', t[1] * 1000 + math.floor(t[2] / 1000))
end
--
-- drop_client(waiters, client): client no longer listens on its wake channel (it closed, or is still
-- subscribing: then it tries again once subscribed). Its records would only absorb hand-overs: remove
-- them. Its listing among the clients stays till it lapses: a client still subscribing its wake
-- channel may listen on the object's channel already (on a cluster each channel is a subscription of
-- its own), and a release that found it listening unlisted would take it for a Java waiter.
local function drop_client(waiters, client)
  for _, r in ipairs(redis.call('zrange', waiters, 0, -1)) do
    if string.sub(r, 1, #client + 1) == client .. ':' then
      redis.call('zrem', waiters, r)
    end
  end
end
