--! KEYS lock writers leases channel
--! ARGV field publish
-- A waiting writer gives up (writer preference): it stops keeping new readers out. KEYS as
-- rwlock_leases.lua says. Publishes '1' (wake all) when it was announced, so that readers it kept out
-- try again at once.
if redis.call('zrem', KEYS[2], ARGV[1]) == 1 then
  redis.call(ARGV[2], KEYS[4], '1')
end
return 0
