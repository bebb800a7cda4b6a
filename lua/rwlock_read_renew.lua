--! KEYS lock leases
--! ARGV field
--! BATCH ttl
-- Renew a batch of read holds, as renew.lua says.
-- KEYS: two per hold: the lock, then the prefix of its lease keys ("{N}:"); ARGV[1] ttl ms,
-- ARGV[1+i] owner field of hold i.
-- A hold is no longer held when its field is gone, or one of its lease keys expired: then a writer
-- may already be in. Only the owner's own lease keys are extended, so that a reader of a dead client
-- ages out even while others keep reading, and none is shortened (a read hold given a longer lease
-- keeps it).
--! INCLUDE renew.lua extend.lua
local ttl = tonumber(ARGV[1])
return renew_holds(#KEYS / 2, ttl, function(i)
  local lock, leases = KEYS[2 * i - 1], KEYS[2 * i] .. ARGV[i + 1] .. ':rwlock_timeout'
  local n = tonumber(redis.pcall('hget', lock, ARGV[i + 1]))
  local ok = n ~= nil and n > 0
  if ok then
    for k = 1, n do
      local left = redis.call('pttl', leases .. ':' .. k)
      if left == -2 then
        ok = false
      elseif ttl > 0 and left < ttl then
        redis.call('pexpire', leases .. ':' .. k, ttl)
      end
    end
  end
  if ok and ttl > 0 then
    extend(lock, ttl)
  end
  return ok
end)
