-- Remove the record of a waiter that left, and give back the permits a release took for it if nobody
-- took the grant, unless the semaphore they were taken from has ended since (Delete, a TTL): they do
-- not set it anew (semaphore_wake.lua comes first).
-- KEYS as semaphore_add.lua; ARGV[1] the waiter's record, ARGV[2] publish command, ARGV[3] numsub
-- command, ARGV[4] the request id of the waiter's acquisition, or '': a try of it still on its way
-- (held up on a connection that failed, or by a stalled server) then does nothing (once.lua), so
-- that it records no waiter that is gone, for a release to hand permits to. Returns 1 when it gave
-- permits back. Sending it twice does what sending it once does.
if ARGV[4] ~= '' then
  redis.call('set', KEYS[7] .. ARGV[4], 'undone', 'px', 60000, 'nx') -- a try that took permits is given back by its memo
end
redis.call('zrem', KEYS[3], ARGV[1])
if redis.call('hdel', KEYS[6], ARGV[1]) == 0 or redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local want = tonumber((string.match(ARGV[1], ':([^:]*)$')))
local n = redis.call('incrby', KEYS[1], want)
wake(KEYS[1], n, KEYS[3], KEYS[4], KEYS[6], KEYS[2], KEYS[5], ARGV[2], ARGV[3])
return 1
