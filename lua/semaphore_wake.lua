-- Hand-over of permits to the waiters of a counting semaphore (Redisson's layout: a string count). The
-- scripts that include it include wake_records.lua first.
--
-- Redisson announces a release by publishing the new count on the semaphore's channel, which every
-- waiting process hears: with N processes waiting for one permit, N-1 of them try in vain. Our
-- waiters also leave a record (sorted set: member = '<client id>:<attempt>:<permits wanted>', score =
-- the time in microseconds by which the waiter will have tried again), each client listens on a wake
-- channel of its own and records itself among the semaphore's clients (sorted set: member = client id,
-- score = until when, in milliseconds, it may still be listening).
--
-- A release takes permits for the waiters that the count serves, those that tried least recently
-- first, if their client listens: for each it decrements the count, moves the record to the grants
-- (hash: member -> the record's score) and tells the client with '@<member> 0 <score>' on the
-- client's channel. The waiter returns without a try and its client deletes the grant; a try it makes
-- meanwhile finds the grant and takes it (semaphore_acquire.lua); one that left gives it back
-- (semaphore_forget.lua). The score tells the waiter which of its tries the grant came after.
-- Redisson's message (the count left) still goes out on the shared channel whenever permits are
-- left, as every Redisson release publishes it: a Java waiter never misses one.
--
-- wake(sem, count, waiters, clients, grants, shared, prefix, publish, numsub): count is the count
-- now, prefix the wake channels' prefix (a client id follows), publish 'publish' or 'spublish',
-- numsub 'numsub' or 'shardnumsub', or '' where subscriber counts cannot be trusted (classic Pub/Sub
-- on a cluster counts one node): then everyone is woken as Redisson does.
--
-- Record keys of another type are never written to: waiters of another type wake as if nobody of ours
-- waited, grants of another type serve nobody.
local function wake(sem, count, waiters, clients, grants, shared, prefix, publish, numsub)
  local recorded = count > 0 and numsub ~= '' and redis.call('type', waiters)
  if type(recorded) == 'table' then
    recorded = recorded.ok
  end
  if recorded ~= 'zset' then
    redis.call(publish, shared, count) -- nobody of ours can go, or waits: only Redisson's message
    return
  end
  drop_expired(waiters, clients)
  local left = count
  local served = false
  local listening = {}
  -- The count serves few waiters, usually: read a few records more than it could serve, in case
  -- some belong to clients that no longer listen.
  local records = redis.call('zrange', waiters, 0, math.min(count, 92) + 7, 'withscores')
  for i = 1, #records, 2 do
    if left <= 0 then
      break
    end
    local m = records[i]
    local client, want = string.match(m, '^([^:]*):[^:]*:([^:]*)$')
    want = tonumber(want)
    if client and want then
      if listening[client] == nil then
        listening[client] = tonumber(redis.call('pubsub', numsub, prefix .. client)[2]) > 0
        if not listening[client] then
          drop_client(waiters, client)
        end
      end
      if listening[client] and want <= left then
        local score = string.format('%.0f', tonumber(records[i + 1]))
        if type(redis.pcall('hset', grants, m, score)) == 'table' then
          break
        end
        left = redis.call('decrby', sem, want)
        redis.call('zrem', waiters, m)
        redis.call(publish, prefix .. client, '@' .. m .. ' 0 ' .. score)
        served = true
      end
    end
  end
  -- A grant lives until its waiter's client deletes it; this only bounds what a lost delete leaves.
  if served and redis.call('pttl', grants) < 600000 then
    redis.call('pexpire', grants, 600000)
  end
  -- The last recorded waiter served: the clients' record, which only tells who listens, goes too.
  if served and redis.call('exists', waiters) == 0 then
    redis.pcall('zremrangebyrank', clients, 0, -1)
  end
  -- Redisson's waiters hear only this message, and publish it on every release: whatever is left
  -- is announced, even when ours were served, since who else listens cannot be told for sure (a
  -- client stays recorded for a while after it stopped listening).
  if left > 0 then
    redis.call(publish, shared, left)
  end
end
