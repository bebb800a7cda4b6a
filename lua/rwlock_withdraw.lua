--! KEYS lock writers leases channel
--! ARGV field publish
-- A waiting writer gives up (writer preference): it stops keeping new readers out. KEYS as
-- rwlock_leases.lua says. Publishes '1' (wake all) when it was announced, so that readers it kept out
-- try again at once.
local writers, channel = KEYS[2], KEYS[4]
local field, publish = ARGV[1], ARGV[2]
if redis.call('zrem', writers, field) == 1 then
  redis.call(publish, channel, '1')
end
return 0
