-- A waiting writer gives up (writer preference): it stops keeping new readers out.
-- KEYS[1] waiting writers, KEYS[2] channel; ARGV[1] write field, ARGV[2] publish command
-- Publishes '1' (wake all) when it was announced, so that readers it kept out try again at once.
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], '1')
end
return 0
