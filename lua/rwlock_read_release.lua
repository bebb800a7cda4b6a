-- Release one read hold.
-- KEYS as rwlock_leases.lua says, which comes first.
-- ARGV[1] owner field, ARGV[2] publish command, ARGV[3] latch ttl ms, ARGV[4] the read holds the
-- client counts ('0': unknown), ARGV[5] '1' when this request was sent before (a network error hid
-- the answer)
-- Returns the read holds the owner keeps, -1 when it held none, or -2 when a re-sent request finds
-- none. When the last live read hold
-- goes, the lock is deleted and the channel gets '0' (wake one), or '1' (wake all) when writers
-- announced themselves, so that the readers they keep out do not swallow the wake-up. A re-sent
-- request never releases twice, as rlock_release.lua explains.
local resent, held = ARGV[5] == '1', tonumber(ARGV[4])
if resent then
  local done = redis.call('get', KEYS[6])
  if done then return tonumber(done) end
end
local mode = redis.call('hget', KEYS[1], 'mode')
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if mode == false or count == nil or count <= 0 then
  if resent then return -2 end
  return -1
end
if resent and count == held - 1 then
  return count -- the first send released it
end
local before = count
count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
redis.call('del', KEYS[3] .. ':' .. (count + 1))
if count == 0 then
  redis.call('hdel', KEYS[1], ARGV[1])
end
if mode == 'read' then
  local left = longest_read_lease()
  if left > 0 then
    redis.call('pexpire', KEYS[1], left)
  else
    redis.call('del', KEYS[1])
    local msg = '0'
    if redis.call('exists', KEYS[2]) == 1 then
      msg = '1'
    end
    redis.call(ARGV[2], KEYS[4], msg)
    count = 0
  end
end
-- In write mode the reader is the writer itself (downgrade), and the write lease governs the lock.
if count > 0 and before ~= held then
  redis.call('set', KEYS[6], count, 'px', ARGV[3])
end
return count
