--! KEYS clients
--! ARGV client window linger
-- Lists a client among those that listen on an object's channel, as record.lua does, before the
-- client subscribes to that channel: a release compares how many listen there with how many are
-- listed (rlock_wake.lua), and a client that listened before it was listed would look like a Java
-- waiter. Sending it twice does what sending it once does.
local t = redis.call('time')
local keep = tonumber(ARGV[2]) + tonumber(ARGV[3])
redis.call('zadd', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000) + keep, ARGV[1])
redis.call('pexpire', KEYS[1], keep)
return 1
