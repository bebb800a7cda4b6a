--! KEYS lock writers leases channel memo
--! ARGV rid mode publish
-- Free a read-write lock whoever holds it, when it is in the given mode ('read' or 'write'). KEYS as
-- rwlock_leases.lua says. Returns 1 when it freed the lock (the channel got '1', wake all), else 0;
-- the answer is kept under the memo, which a re-sent request answers (MODE 1).
local memo = KEYS[5] .. ARGV[1]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
local mode = redis.pcall('hget', KEYS[1], 'mode')
if type(mode) == 'table' or (mode and mode ~= 'read' and mode ~= 'write') or (not mode and redis.call('exists', KEYS[1]) == 1) then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1]) -- no read-write lock: left as it is
end
if mode ~= ARGV[2] then
  redis.call('set', memo, 0, 'px', 60000)
  return 0
end
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields, 2 do
  local n = tonumber(fields[i + 1])
  if n then
    for k = 1, n do
      redis.call('del', KEYS[3] .. fields[i] .. ':rwlock_timeout:' .. k)
    end
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[4], '1')
redis.call('set', memo, 1, 'px', 60000)
return 1
