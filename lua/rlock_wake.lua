-- Directed wake-up for the waiters of a lock kept as Redisson's hash.
--
-- Redisson wakes waiters by publishing '0' on the lock's channel, which every waiting process hears:
-- with N processes waiting, N-1 of them try in vain after each release. Our waiters also leave a
-- record (sorted set: member = owner field, score = the time by which it will have tried again), each
-- client listens on a wake channel of its own, and records itself among the lock's clients (sorted
-- set: member = client id, score = until when it may still be listening). A release wakes the client
-- of the waiter that tried least recently, on that client's channel only. Redisson's '0' is still
-- published on the shared channel when more listen there than our clients: a Java waiter may.
--
-- wake(waiters, clients, shared, prefix, publish, numsub): prefix is the wake channels' prefix
-- (a client id follows), publish 'publish' or 'spublish', numsub 'numsub' or 'shardnumsub', or ''
-- where subscriber counts cannot be trusted (classic Pub/Sub on a cluster counts one node): then
-- everyone is woken as Redisson does.
local function wake(waiters, clients, shared, prefix, publish, numsub)
  if numsub == '' or redis.call('exists', waiters) == 0 then
    redis.call(publish, shared, '0') -- nobody of ours waits: only Redisson's message
    return
  end
  local t = redis.call('time')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  redis.call('zremrangebyscore', waiters, '-inf', now)
  redis.call('zremrangebyscore', clients, '-inf', now)
  local woken = false
  local tried = {}
  for _, owner in ipairs(redis.call('zrange', waiters, 0, 99)) do
    local client = string.match(owner, '^(.*):[^:]*$') or owner
    if not tried[client] then
      tried[client] = true
      local channel = prefix .. client
      if tonumber(redis.call('pubsub', numsub, channel)[2]) > 0 then
        redis.call(publish, channel, '0')
        woken = true
        break
      end
      -- Nobody listens for this client: it closed, or is still subscribing (then it tries again
      -- once subscribed). Its records would only absorb wake-ups.
      redis.call('zrem', clients, client)
      for _, m in ipairs(redis.call('zrange', waiters, 0, -1)) do
        if string.sub(m, 1, #client + 1) == client .. ':' then
          redis.call('zrem', waiters, m)
        end
      end
    end
  end
  -- Each recorded client listens on the shared channel too; anyone beyond them may be a Java waiter.
  if not woken or tonumber(redis.call('pubsub', numsub, shared)[2]) > redis.call('zcard', clients) then
    redis.call(publish, shared, '0')
  end
end
