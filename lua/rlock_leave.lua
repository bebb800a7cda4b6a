--! KEYS lock counter waiters clients channel wake
--! ARGV field tag publish numsub
-- A waiter that left: remove its record, and give back the lock if a release handed it to that
-- waiter and nobody took the grant.
-- Returns 1 when it gave a grant back. Sending it twice does what sending it once does.
--! INCLUDE wake_records.lua rlock_wake.lua
if ARGV[2] == '' then
  return 0
end
local mark = tonumber(redis.call('zscore', KEYS[3], ARGV[2]))
redis.call('zrem', KEYS[3], ARGV[2])
if not mark or mark > 0 then
  return 0
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not count then
  return 0
end
if count > 1 then -- the same owner entered again on top of the grant, with another wait
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  return 1
end
redis.call('del', KEYS[1])
wake(ARGV[3], ARGV[4])
return 1
