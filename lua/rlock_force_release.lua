-- Release a lock whoever holds it (rlock_wake.lua comes first).
-- KEYS[1] lock, KEYS[2] channel, KEYS[3] waiter records, KEYS[4] clients, KEYS[5] wake channel
-- prefix, KEYS[6] fencing counter
-- ARGV[1] publish command, ARGV[2] numsub command. Returns 1 if it was held.
if redis.call('del', KEYS[1]) == 1 then
  wake(KEYS[1], KEYS[6], KEYS[3], KEYS[4], KEYS[2], KEYS[5], ARGV[1], ARGV[2])
  return 1
end
return 0
