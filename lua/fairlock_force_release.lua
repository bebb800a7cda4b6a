-- Release a fair lock whoever holds it, and wake (or hand the lock to) the first waiter that is still
-- there (fairlock_wake.lua comes first).
-- KEYS[1] lock, KEYS[2] waiter queue, KEYS[3] waiter deadlines, KEYS[4] channel prefix,
-- KEYS[5] waiter records, KEYS[6] fencing counter
-- ARGV[1] publish command, ARGV[2] slot ms, ARGV[3] numsub command. Returns 1 if the lock was held.
local held = redis.call('del', KEYS[1])
wake(KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[4], KEYS[6], tonumber(ARGV[2]), ARGV[1], ARGV[3])
return held
