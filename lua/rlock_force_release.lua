-- Release a lock whoever holds it (rlock_wake.lua comes first, with the order of KEYS).
-- ARGV[1] publish command, ARGV[2] numsub command. Returns 1 if it was held.
if redis.call('del', KEYS[1]) == 1 then
  wake(ARGV[1], ARGV[2])
  return 1
end
return 0
