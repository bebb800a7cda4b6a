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
-- wake(lock, queue, deadlines, records, prefix, tokens, slot, publish, numsub): prefix is the
-- channels' prefix (':' and the owner follow), tokens the fencing counter, slot the wait slot in ms,
-- numsub 'numsub' or 'shardnumsub', or '' where subscriber counts cannot be trusted (classic Pub/Sub
-- on a cluster counts one node): then the head is only woken.
local function wake(lock, queue, deadlines, records, prefix, tokens, slot, publish, numsub)
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  while true do
    local head = redis.call('lindex', queue, 0)
    if not head then
      return
    end
    local deadline = tonumber(redis.call('zscore', deadlines, head))
    if deadline and deadline > now then
      local channel = prefix .. ':' .. head
      local rec = numsub ~= '' and redis.call('hget', records, head)
      local score, tag, lease, fenced
      if rec then
        score, tag, lease, fenced = string.match(rec, '^(%d+) (%S+) (%d+) ([01])$')
      end
      if score and lease ~= '0' and tonumber(redis.call('pubsub', numsub, channel)[2]) > 0 then
        redis.call('lpop', queue)
        redis.call('zrem', deadlines, head)
        for _, w in ipairs(redis.call('zrange', deadlines, 0, -1)) do
          redis.call('zincrby', deadlines, -slot, w)
        end
        redis.call('hset', lock, head, 1)
        redis.call('pexpire', lock, lease)
        local token = 0
        if fenced == '1' then
          token = redis.call('incr', tokens)
        end
        redis.call('hset', records, head, '-' .. token .. ' ' .. tag)
        -- The mark must outlive the grant, which nobody renews until the waiter takes it.
        if redis.call('pttl', records) < tonumber(lease) then
          redis.call('pexpire', records, lease)
        end
        redis.call(publish, channel, '@' .. tag .. ' ' .. token .. ' ' .. score)
      else
        redis.call(publish, channel, '0')
      end
      return
    end
    -- Passed over: it did not come back in time.
    redis.call('lpop', queue)
    redis.call('zrem', deadlines, head)
    redis.call('hdel', records, head)
  end
end
