--! KEYS clients
--! ARGV client window linger
-- Lists a client among those that listen on an object's channel, as record.lua does, before the
-- client subscribes to that channel: a release compares how many listen there with how many are
-- listed (rlock_wake.lua), and a client that listened before it was listed would look like a Java
-- waiter. Sending it twice does what sending it once does. A record of another type is refused, and
-- left as it is (refuse.lua).
local clients = KEYS[1]
local client, window, linger = ARGV[1], ARGV[2], ARGV[3]
local t = redis.call('time')
local keep = tonumber(window) + tonumber(linger)
local failed = redis.pcall('zadd', clients, t[1] * 1000 + math.floor(t[2] / 1000) + keep, client)
if type(failed) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(clients, nil, failed.err)
end
redis.call('pexpire', clients, keep)
return 1
