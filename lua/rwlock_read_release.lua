--! KEYS lock writers leases channel memo
--! ARGV field held rid publish
-- Release one read hold (rwlock_leases.lua comes first). Replies, and exactly once (MODE 1,
-- MODE 2), as rlock_release.lua says. When the last live read hold goes, the lock is deleted and the
-- channel gets '0' (wake one), or '1' (wake all) when writers announced themselves, so that the
-- readers they keep out do not swallow the wake-up.
local held, memo = tonumber(ARGV[2]), KEYS[5] .. ARGV[3]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
local mode = redis.pcall('hget', KEYS[1], 'mode')
if type(mode) == 'table' or (mode and mode ~= 'read' and mode ~= 'write') or (not mode and redis.call('exists', KEYS[1]) == 1) then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1]) -- no read-write lock
end
local count = mode and tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if count and count <= 0 then
  count = nil
end
if MODE == 2 then
  local m = redis.call('get', memo)
  if m == 'undone' or (not m and count ~= held) then
    return -3
  end
  redis.call('set', memo, 'undone', 'px', 60000)
end
if not count then
  if MODE == 1 and held == 1 then return 0 end -- the first send released the last hold
  return -1
end
if MODE ~= 2 and count == held - 1 then
  return count -- the first send released it
end
local before = count
count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
-- The owner's read holds are not told apart, their leases are: the shortest lease goes, so that the
-- holds left keep the longest (each what it was promised, however leases were mixed), and the leases
-- stay numbered 1..count, as Redisson numbers them.
local prefix = KEYS[3] .. ARGV[1] .. ':rwlock_timeout:'
local top = redis.call('pttl', prefix .. (count + 1))
local shortest, at = top, count + 1
for k = 1, count do
  local left = redis.call('pttl', prefix .. k)
  if left < shortest then
    shortest, at = left, k
  end
end
if at <= count and top > 0 then
  redis.call('set', prefix .. at, 1, 'px', top)
end
redis.call('del', prefix .. (count + 1))
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
    redis.call(ARGV[4], KEYS[4], msg)
    count = 0
  end
end
-- In write mode the reader is the writer itself (downgrade), and the write lease governs the lock.
if count > 0 and before ~= held and MODE ~= 2 then
  redis.call('set', memo, count, 'px', 60000)
end
return count
