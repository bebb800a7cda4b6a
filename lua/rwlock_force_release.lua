-- Free a read-write lock whoever holds it, when it is in the given mode.
-- KEYS as rwlock_leases.lua says (KEYS[1] to KEYS[5]).
-- ARGV[1] 'read' or 'write', ARGV[2] publish command
-- Returns 1 when it freed the lock (the channel got '1', wake all), else 0.
if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then
  return 0
end
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields, 2 do
  local n = tonumber(fields[i + 1])
  if n then
    for k = 1, n do
      redis.call('del', KEYS[5] .. fields[i] .. ':rwlock_timeout:' .. k)
    end
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[4], '1')
return 1
