-- Release a lock whoever holds it.
-- KEYS[1] lock, KEYS[2] channel; ARGV[1] publish command. Returns 1 if it was held.
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '0')
  return 1
end
return 0
