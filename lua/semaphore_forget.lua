--! KEYS semaphore channel waiters clients wakes grants
--! ARGV record publish numsub
-- Remove the record of a waiter that left, and give back the permits a release took for it if nobody
-- took the grant, unless the semaphore they were taken from has ended since (Delete, a TTL): they do
-- not set it anew (semaphore_wake.lua). record: the waiter's. Returns 1 when it gave permits back.
-- Sending it twice does what sending it once does.
--! INCLUDE wake_records.lua semaphore_wake.lua
local semaphore, channel, waiters, clients, wakes, grants = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local record, publish, numsub = ARGV[1], ARGV[2], ARGV[3]
redis.call('zrem', waiters, record)
if redis.call('hdel', grants, record) == 0 or redis.call('exists', semaphore) == 0 then
  return 0
end
local want = tonumber((string.match(record, ':([^:]*)$')))
local n = redis.call('incrby', semaphore, want)
wake(semaphore, n, waiters, clients, grants, channel, wakes, publish, numsub)
return 1
