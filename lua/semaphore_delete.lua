--! KEYS semaphore channel waiters clients wake grants memo
--! ARGV rid
-- Delete a counting semaphore and what this library keeps beside it: waiter records, clients and
-- grants (semaphore_wake.lua). Nothing is published, as in Redisson: nobody can proceed. Returns 1
-- when the semaphore existed; once.lua comes first: exactly once by its memo.
local memo = KEYS[7] .. ARGV[1]
local found, reply = recall(memo)
if found then
  return reply
end
local n = redis.call('del', KEYS[1])
redis.call('del', KEYS[3], KEYS[4], KEYS[6])
return remember(memo, n)
