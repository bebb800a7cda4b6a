-- Directed wake-up for the waiters of a counting semaphore (Redisson's layout: a string count).
--
-- Redisson announces a release by publishing the new count on the semaphore's channel, which every
-- waiting process hears: with N processes waiting for one permit, N-1 of them try in vain. Our
-- waiters also leave a record (sorted set: score = the time in microseconds by which the waiter will
-- have tried again; member = '<client id>:<attempt>:<permits wanted>'), each client listens on a wake
-- channel of its own and records itself among the semaphore's clients (sorted set: member = client
-- id, score = until when, in milliseconds, it may still be listening). A release walks the records
-- from the one that tried least recently and tells each listening client, on its channel, how many
-- permits its waiters may try for: the count, shared out in record order among the waiters it covers.
-- Redisson's message (the count) is still published on the shared channel when more listen there
-- than our clients, or when no record was served.
--
-- wake(count, waiters, clients, shared, prefix, publish, numsub): count is the available permits;
-- prefix the wake channels' prefix (a client id follows); publish 'publish' or 'spublish'; numsub
-- 'numsub' or 'shardnumsub', or '' where subscriber counts cannot be trusted (classic Pub/Sub on a
-- cluster counts one node): then everyone is woken as Redisson does.
local function wake(count, waiters, clients, shared, prefix, publish, numsub)
  if count <= 0 or numsub == '' or redis.call('exists', waiters) == 0 then
    redis.call(publish, shared, count) -- nobody of ours can go, or waits: only Redisson's message
    return
  end
  local t = redis.call('time')
  redis.call('zremrangebyscore', waiters, '-inf', string.format('%.0f', t[1] * 1000000 + t[2]))
  redis.call('zremrangebyscore', clients, '-inf', t[1] * 1000 + math.floor(t[2] / 1000))
  local left = count
  local budget = {} -- per listening client, in the order first served
  local order = {}
  local listening = {}
  for _, m in ipairs(redis.call('zrange', waiters, 0, 99)) do
    if left <= 0 then
      break
    end
    local client, _, want = string.match(m, '^([^:]*):([^:]*):([^:]*)$')
    want = tonumber(want)
    if client and want then
      if listening[client] == nil then
        listening[client] = tonumber(redis.call('pubsub', numsub, prefix .. client)[2]) > 0
        if not listening[client] then
          -- Nobody listens for this client: it closed, or is still subscribing (then it tries
          -- again once subscribed). Its records would only absorb wake-ups.
          redis.call('zrem', clients, client)
          for _, r in ipairs(redis.call('zrange', waiters, 0, -1)) do
            if string.sub(r, 1, #client + 1) == client .. ':' then
              redis.call('zrem', waiters, r)
            end
          end
        end
      end
      if listening[client] and want <= left then
        if not budget[client] then
          budget[client] = 0
          order[#order + 1] = client
        end
        budget[client] = budget[client] + want
        left = left - want
      end
    end
  end
  for _, client in ipairs(order) do
    redis.call(publish, prefix .. client, budget[client])
  end
  -- Each recorded client listens on the shared channel too; anyone beyond them may be a Java waiter.
  if #order == 0
      or tonumber(redis.call('pubsub', numsub, shared)[2]) > redis.call('zcard', clients) then
    redis.call(publish, shared, count)
  end
end
