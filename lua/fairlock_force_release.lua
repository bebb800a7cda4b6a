-- Release a fair lock whoever holds it, and wake (or hand the lock to) the first waiter that is still
-- there (fairlock_wake.lua comes first, with the order of KEYS).
-- ARGV[1] publish command, ARGV[2] slot ms, ARGV[3] numsub command. Returns 1 if the lock was held.
local held = redis.call('del', KEYS[1])
wake(tonumber(ARGV[2]), ARGV[1], ARGV[3])
return held
