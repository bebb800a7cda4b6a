--! KEYS lock writers leases channel memo
--! ARGV rid mode publish
-- Free a read-write lock whoever holds it, when it is in the given mode ('read' or 'write')
-- (rwlock_mode.lua). KEYS as rwlock_leases.lua says. Returns 1 when it freed the lock
-- (the channel got '1', wake all), else 0; the answer is kept under the memo, which a re-sent
-- request answers (MODE 1).
--! INCLUDE rwlock_mode.lua once.lua answered.lua
local lock, leases, channel, memo = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local rid, mode, publish = ARGV[1], ARGV[2], ARGV[3]
memo = memo .. rid
local done, current = answered(memo, MODE == 1, rwlock_mode, lock)
if done then return current end
if current ~= mode then
  return remember(memo, 0)
end
local fields = redis.call('hgetall', lock)
for i = 1, #fields, 2 do
  local n = tonumber(fields[i + 1])
  if n then
    for k = 1, n do
      redis.call('del', leases .. fields[i] .. ':rwlock_timeout:' .. k)
    end
  end
end
redis.call('del', lock)
redis.call(publish, channel, '1')
return remember(memo, 1)
