-- Wake, or hand the lock to, the first waiter of a free fair lock that is still there.
--
-- Redisson wakes the head waiter with '0' on its own channel, and the waiter then tries: a release
-- costs the waiter a round trip of its own. Our waiters also leave a record (hash: field = owner,
-- value = '<score> <tag> <lease ms> <fenced 0|1>', score being the time in microseconds of the try
-- that wrote it, tag naming that acquisition). When the head waiter has a record and its channel is
-- listened to, it is given the lock: its place is taken off the queue as its own acquisition would
-- take it, the hash gets its field with its lease (and its fencing token), the record becomes
-- '-<token> <tag>' (the grant's mark), and its channel gets '@<tag> <token> <score>'. The waiter
-- returns without a try; a try it makes meanwhile finds the mark and takes the grant instead
-- (fairlock_acquire.lua); one that left gives it back (fairlock_leave.lua). The score tells the waiter
-- which of its tries the grant came after, so a message delayed past a later try is ignored. A head
-- without a record (a Java waiter: Redisson would re-enter a lock it found in its name) gets '0'.
--
-- Every fair lock script takes its keys in one order, a prefix of: KEYS[1] lock, KEYS[2] waiter queue,
-- KEYS[3] waiter deadlines, KEYS[4] fencing counter, KEYS[5] channels' prefix (the owner
-- follows, which keeps the prefix's hash tag and so its slot), KEYS[6] waiter records, KEYS[7] the
-- memos' prefix (core/once.go).
--
-- pass_over(now, back, numsub, slot): drops the head waiters whose deadline has passed (a head without
-- one counts as late), up to back (a caller that is back in time, or nil). Beyond Redisson, a head of
-- ours (it has a waiting record) is late once its last try is a slot old (the deadline Redisson's
-- lowering would have brought it to, which take_head leaves out), and it is dropped sooner when nobody
-- listens on its channel (numsub as for wake; '' to skip) and its last try is more than a grace old:
-- its process has gone. The grace covers a try sent while its Client was still subscribing. Returns
-- the head left, whether any was dropped, nil, and the head's record (false: none; nil when the head
-- is back); or nil, false and the refusal (refuse.lua) when the queue, the deadlines or the records
-- hold another type, which it finds before it writes.
local function pass_over(now, back, numsub, slot)
  local queue, deadlines, prefix, records = KEYS[2], KEYS[3], KEYS[5], KEYS[6]
  local dropped = false
  while true do
    local head = redis.pcall('lindex', queue, 0)
    if type(head) == 'table' then
      --! INCLUDE refuse.lua
      return nil, false, refuse(queue, nil, head.err)
    end
    if not head or head == back then
      return head, dropped
    end
    local deadline = redis.pcall('zscore', deadlines, head)
    if type(deadline) == 'table' then
      --! INCLUDE refuse.lua
      return nil, false, refuse(deadlines, nil, deadline.err)
    end
    deadline = tonumber(deadline)
    if deadline and deadline > now then
      local rec = redis.pcall('hget', records, head)
      if type(rec) == 'table' then
        --! INCLUDE refuse.lua
        return nil, false, refuse(records, nil, rec.err)
      end
      local tried = tonumber((string.match(rec or '', '^(%d+) ')))
      if not tried then
        return head, dropped, nil, rec
      end
      tried = tried / 1000
      if tried + slot > now then
        if tried + 2000 > now or numsub == '' then
          return head, dropped, nil, rec
        end
        -- A count that cannot be read (an embedded server's reply) keeps the waiter.
        local listeners = redis.call('pubsub', numsub, prefix .. head)[2]
        if not listeners or tonumber(listeners) > 0 then
          return head, dropped, nil, rec
        end
      end
    end
    redis.call('lpop', queue)
    redis.call('zrem', deadlines, head)
    redis.call('hdel', records, head)
    dropped = true
  end
end

-- take_head(head, slot): head leaves the queue to hold the lock, and everyone behind it moves up one
-- place. Redisson lowers every waiter's deadline by a slot for it. Only two kinds of deadline need
-- that: one that nothing else moves (a waiter without a waiting record: a Java one, or one of ours
-- before its first record), which is how a Java waiter that died is passed over in time; and the last
-- waiter's, which a Java waiter joining behind builds its own on. A waiter with a record pushes its
-- own on at every try, and pass_over takes its last try for its deadline at the head. So an
-- acquisition lowers those few, and reads the records of the line in one call, not one per waiter.
local function take_head(head, slot)
  local queue, deadlines, records = KEYS[2], KEYS[3], KEYS[6]
  redis.call('lpop', queue)
  redis.call('zrem', deadlines, head)
  local waiters = redis.call('zrange', deadlines, 0, -1)
  if #waiters == 0 then
    return
  end
  local last = redis.call('lindex', queue, -1)
  for i = 1, #waiters, 4000 do -- unpack's bound on a call's arguments
    local recs = redis.pcall('hmget', records, unpack(waiters, i, math.min(i + 3999, #waiters)))
    if recs.err then
      recs = {} -- records of another type: nobody keeps a deadline of its own
    end
    for j = i, math.min(i + 3999, #waiters) do
      local w, rec = waiters[j], recs[j - i + 1]
      if w == last or not (rec and string.find(rec, '^%d+ ')) then
        redis.call('zincrby', deadlines, -slot, w)
      end
    end
  end
end

-- wake(slot, publish, numsub): slot is the wait slot in ms, numsub 'numsub' or 'shardnumsub', or ''
-- where subscriber counts cannot be trusted (classic Pub/Sub on a cluster counts one node): then the
-- head is only woken. Side keys of another type wake nobody, and are left alone; a fencing counter
-- that is not one makes the hand-over a wake-up, whose waiter's try then refuses it.
local function wake(slot, publish, numsub)
  local lock, tokens, prefix, records = KEYS[1], KEYS[4], KEYS[5], KEYS[6]
  local t = redis.call('time')
  local head, _, _, rec = pass_over(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), nil, numsub, slot)
  if not head then
    return
  end
  local channel = prefix .. head
  rec = numsub ~= '' and rec
  local score, tag, lease, fenced
  if type(rec) == 'string' then
    score, tag, lease, fenced = string.match(rec, '^(%d+) (%S+) (%d+) ([01])$')
  end
  local grant = score and lease ~= '0' and tonumber(redis.call('pubsub', numsub, channel)[2]) > 0
  local token = 0
  if grant and fenced == '1' then
    --! INCLUDE token.lua
    token = next_token(tokens)
    grant = token ~= nil -- nil: the waiter's try refuses the counter
  end
  if grant then
    take_head(head, slot)
    redis.call('hset', lock, head, 1)
    redis.call('pexpire', lock, lease)
    redis.call('hset', records, head, '-' .. token .. ' ' .. tag)
    -- The mark must outlive the grant, which nobody renews until the waiter takes it.
    if redis.call('pttl', records) < tonumber(lease) then
      redis.call('pexpire', records, lease)
    end
    redis.call(publish, channel, '@' .. tag .. ' ' .. token .. ' ' .. score)
  else
    redis.call(publish, channel, '0')
  end
end
