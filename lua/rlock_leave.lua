--! KEYS lock counter waiters clients channel wake
--! ARGV field tag publish numsub
-- A waiter that left: remove its record, and give back the lock if a release handed it to that
-- waiter and nobody took the grant.
-- Returns 1 when it gave a grant back. Sending it twice does what sending it once does. Keys of
-- another type are left alone: there is no record, nor grant, to take back.
--! INCLUDE wake_records.lua rlock_wake.lua
if ARGV[2] == '' then
  return 0
end
local mark = redis.pcall('zscore', KEYS[3], ARGV[2])
if type(mark) == 'table' then
  return 0
end
mark = tonumber(mark)
redis.call('zrem', KEYS[3], ARGV[2])
if not mark or mark > 0 then
  return 0
end
local count = redis.pcall('hget', KEYS[1], ARGV[1])
if type(count) == 'table' or not tonumber(count) then
  return 0
end
count = tonumber(count)
if count > 1 then -- the same owner entered again on top of the grant, with another wait
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  return 1
end
redis.call('del', KEYS[1])
wake(ARGV[3], ARGV[4])
return 1
