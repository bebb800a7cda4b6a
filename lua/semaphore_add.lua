-- Add permits to a counting semaphore (a release, or an adjustment that may make the count negative)
-- and announce the new count, which tells waiters how many permits they may now take between them.
-- KEYS[1] semaphore, KEYS[2] channel; ARGV[1] permits to add (may be negative), ARGV[2] publish command.
-- Returns the new count.
local n = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], n)
return n
