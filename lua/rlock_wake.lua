-- Directed wake-up, and hand-over, for the waiters of a lock kept as Redisson's hash. The scripts
-- include it, after wake_records.lua, where they wake (lua.Load's INCLUDE).
--
-- Redisson wakes waiters by publishing '0' on the lock's channel, which every waiting process hears:
-- with N processes waiting, N-1 of them try in vain after each release. Our waiters also leave a
-- record (sorted set: score = the time in microseconds by which the waiter will have tried again;
-- member = '<client id>:<owner id>:<attempt>:<lease ms>:<fenced 0|1>', the first two parts being its
-- owner field), each client listens on a wake channel of its own, and records itself among the lock's
-- clients (sorted set: member = client id, score = until when it may still be listening).
--
-- A Java waiter leaves no record, so a hand-over to a recorded waiter at every release could starve
-- it. When more listen on the shared channel than our recorded clients (a Java waiter may), releases
-- take turns: one hands over as below and leaves the member '~owed' among the records; the next
-- hands over nothing, publishes Redisson's '0' and leaves '~java' (score: the end of the turn, in
-- microseconds), which keeps our acquisitions off the free lock for JAVA_TURN_MS so that a Java
-- waiter's try, woken by the '0', wins it (rlock_acquire.lua).
--
-- A release hands the lock to the waiter that tried least recently, if its client listens: it writes
-- the waiter's field into the hash with the waiter's lease (and takes its fencing token), marks the
-- record granted (score = minus the token, 0 unfenced) and tells the client which waiter it was, with
-- '@<member> <token> <score>' on the client's channel, score being the record's score before the
-- grant. The waiter returns without a try of its own; a try it makes meanwhile finds the mark and
-- takes the grant instead (rlock_acquire.lua); one that left gives it back (rlock_leave.lua). The
-- score tells the waiter which of its tries the grant came after: a message delayed past a later try
-- (which took the grant, or found it void) is stale, whatever order the connections deliver in. A
-- record with lease 0 asks for a wake-up only ('0'), and so does a record whose member is a bare
-- owner field. Redisson's '0' is still published on the shared channel
-- when more listen there than our clients: a Java waiter may.
--
-- Every rlock script that includes this file takes its keys in one order, a prefix of: KEYS[1] lock, KEYS[2] fencing counter,
-- KEYS[3] waiter records, KEYS[4] clients, KEYS[5] channel, KEYS[6] wake channels' prefix (a client id
-- follows), KEYS[7] the memos' prefix (core/once.go).
--
-- wake(publish, numsub, listening): publish 'publish' or 'spublish', numsub 'numsub' or
-- 'shardnumsub', or '' where subscriber counts cannot be trusted (classic Pub/Sub on a cluster counts
-- one node): then everyone is woken as Redisson does. listening, when the caller has it, is how many
-- listen on the lock's channel.
--
-- Whether a recorded client still listens is what the message to it answers: PUBLISH returns how
-- many received it. A grant nobody received is taken back at once, and the next record tried.
--
-- A record key of another type (written by someone else) is never written to: a release goes on as
-- if nobody of ours waited, and wakes with Redisson's message. A fencing counter that is not one
-- makes a hand-over a wake-up, whose waiter's own try then refuses it.
local JAVA_TURN_MS = 200

local function wake(publish, numsub, listening)
  local lock, tokens, waiters, clients, shared, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
  local records = numsub ~= '' and redis.pcall('zrange', waiters, 0, 99, 'withscores') or {}
  if records.err or #records == 0 then
    redis.call(publish, shared, '0') -- nobody of ours waits: only Redisson's message
    return
  end
  -- Records whose score has passed come first (drop_expired): they are skipped, and dropped, with
  -- the grants nobody took (scores of 0 or less: their lock has been released since). A record that
  -- expired (score above 0) means a waiter, perhaps a client, went away: the clients no longer
  -- listening are dropped then.
  local t = redis.call('time')
  local now = t[1] * 1000000 + t[2]
  local first, gone = 1, false
  while first < #records and tonumber(records[first + 1]) <= now do
    gone = gone or tonumber(records[first + 1]) > 0
    first = first + 2
  end
  if gone then
    drop_expired(waiters, clients)
  elseif first > 1 then
    redis.call('zremrangebyscore', waiters, '-inf', 0)
  end
  -- Each recorded client listens on the shared channel too; anyone beyond them may be a Java waiter.
  -- (ZCOUNT: the clients still listening by now, without a ZREMRANGEBYSCORE on every release.)
  listening = listening or tonumber(redis.call('pubsub', numsub, shared)[2])
  local java = listening > (tonumber(redis.pcall('zcount', clients, t[1] * 1000 + math.floor(t[2] / 1000), '+inf')) or 0)
  if java and redis.call('zrem', waiters, '~owed') == 1 then
    redis.call('zadd', waiters, string.format('%.0f', now + JAVA_TURN_MS * 1000), '~java')
    if redis.call('pttl', waiters) < JAVA_TURN_MS then
      redis.call('pexpire', waiters, JAVA_TURN_MS)
    end
    redis.call(publish, shared, '0')
    return
  end
  local woken = false
  local tried = {}
  for i = first, #records, 2 do
    local m = records[i]
    if string.sub(m, 1, 1) == '~' then
      tried[m] = true -- a turn's mark, not a waiter
    end
    local client, owner, _, lease, fenced =
      string.match(m, '^([^:]*):([^:]*):([^:]*):([^:]*):([^:]*)$')
    if not client then
      client = string.match(m, '^(.*):[^:]*$') or m
    end
    if not tried[client] then
      tried[client] = true
      local channel = prefix .. client
      local token = 0
      if fenced == '1' and lease and lease ~= '0' then
        --! INCLUDE token.lua
        local err
        token, err = next_token(tokens)
        if err then
          token, lease = 0, nil -- a wake-up: the waiter's try refuses the counter
        end
      end
      if lease and lease ~= '0' then
        redis.call('hset', lock, client .. ':' .. owner, 1)
        redis.call('pexpire', lock, lease)
        -- The mark outlives the grant, which nobody renews until the waiter takes it: the records
        -- last a lease longer than the window in which the waiter tries again (record.lua).
        redis.call('zadd', waiters, -token, m)
        woken = redis.call(publish, channel,
          '@' .. m .. ' ' .. token .. ' ' .. string.format('%.0f', tonumber(records[i + 1]))) > 0
        if not woken then
          redis.call('del', lock) -- nobody received the grant: take it back (its token is skipped)
        end
      else
        woken = redis.call(publish, channel, '0') > 0
      end
      if woken then
        break
      end
      drop_client(waiters, client) -- nobody listens for it
    end
  end
  if java and woken then
    -- The next release is the Java waiter's turn; forgotten with the records when nobody waits.
    redis.call('zadd', waiters, string.format('%.0f', now + 60 * 1000000), '~owed')
  end
  if not woken or java then
    redis.call(publish, shared, '0')
  end
end
