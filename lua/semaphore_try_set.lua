-- Set the permits of a counting semaphore unless it has been set before, and announce them.
-- KEYS[1] semaphore, KEYS[2] channel; ARGV[1] permits, ARGV[2] publish command.
-- Returns 1 when set, 0 when the semaphore existed already (nothing changed).
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
