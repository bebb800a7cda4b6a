-- Set the permits of a counting semaphore unless it has been set before, and wake waiters that they
-- can serve (semaphore_wake.lua comes first).
-- KEYS[1] semaphore, KEYS[2] channel, KEYS[3] waiter records, KEYS[4] clients, KEYS[5] wake channel
-- prefix; ARGV[1] permits, ARGV[2] publish command, ARGV[3] numsub command.
-- Returns 1 when set, 0 when the semaphore existed already (nothing changed).
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
wake(tonumber(ARGV[1]), KEYS[3], KEYS[4], KEYS[2], KEYS[5], ARGV[2], ARGV[3])
return 1
