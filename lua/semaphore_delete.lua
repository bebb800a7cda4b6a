-- Delete a counting semaphore and what this library keeps beside it: waiter records, clients and
-- grants (semaphore_wake.lua). Nothing is published, as in Redisson: nobody can proceed.
-- KEYS as semaphore_add.lua. Returns 1 when the semaphore existed.
local n = redis.call('del', KEYS[1])
redis.call('del', KEYS[3], KEYS[4], KEYS[6])
return n
