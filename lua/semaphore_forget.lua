--! KEYS semaphore channel waiters clients wakes grants memo
--! ARGV record publish numsub rid
-- Remove the record of a waiter that left, and give back the permits a release took for it if nobody
-- took the grant, unless the semaphore they were taken from has ended since (Delete, a TTL): they do
-- not set it anew (semaphore_wake.lua). record: the waiter's; rid: the request id of the waiter's
-- acquisition, or '': a try of it still on its way (held up on a connection that failed, or by a
-- stalled server) then does nothing (once.lua's give_up), so that it records no waiter that is gone,
-- for a release to hand permits to. Returns 1 when it gave permits back. Sending it twice does what
-- sending it once does.
--! INCLUDE wake_records.lua semaphore_wake.lua once.lua
local semaphore, channel, waiters, clients, wakes, grants, memo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local record, publish, numsub, rid = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if rid ~= '' then
  give_up(memo .. rid) -- a try that took permits is given back by its memo
end
redis.call('zrem', waiters, record)
if redis.call('hdel', grants, record) == 0 or redis.call('exists', semaphore) == 0 then
  return 0
end
local want = tonumber((string.match(record, ':([^:]*)$')))
local n = redis.call('incrby', semaphore, want)
wake(semaphore, n, waiters, clients, grants, channel, wakes, publish, numsub)
return 1
