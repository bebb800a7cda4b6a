-- Shared by the scripts that hand objects to recorded waiters (rlock_wake.lua, semaphore_wake.lua).
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
