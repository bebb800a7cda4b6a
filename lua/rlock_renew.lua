--! KEYS lock
--! ARGV field
--! BATCH ttl
-- Renew a batch of lock holds (hash field = owner), as renew.lua says. KEYS: one lock per hold; ARGV:
-- ttl in ms, then the owner field of each hold. rwlock_write_renew.lua is this script.
--! INCLUDE renew.lua extend.lua
local ttl = tonumber(ARGV[1])
return renew_holds(#KEYS, ttl, function(i)
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1
  if held and ttl > 0 then
    extend(KEYS[i], ttl) -- a hold re-entered with a longer fixed lease keeps it
  end
  return held
end)
