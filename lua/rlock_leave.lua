--! KEYS lock counter waiters clients channel wake
--! ARGV field tag publish numsub
-- A waiter that left: remove its record, and give back the lock if a release handed it to that
-- waiter and nobody took the grant.
-- Returns 1 when it gave a grant back. Sending it twice does what sending it once does. Keys of
-- another type are left alone: there is no record, nor grant, to take back.
--! INCLUDE wake_records.lua rlock_wake.lua
local lock, waiters = KEYS[1], KEYS[3]
local field, tag, publish, numsub = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if tag == '' then
  return 0
end
local mark = redis.pcall('zscore', waiters, tag)
if type(mark) == 'table' then
  return 0
end
mark = tonumber(mark)
redis.call('zrem', waiters, tag)
if not mark or mark > 0 then
  return 0
end
local count = redis.pcall('hget', lock, field)
if type(count) == 'table' or not tonumber(count) then
  return 0
end
count = tonumber(count)
if count > 1 then -- the same owner entered again on top of the grant, with another wait
  redis.call('hincrby', lock, field, -1)
  return 1
end
redis.call('del', lock)
wake(publish, numsub)
return 1
