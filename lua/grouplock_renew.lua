--! KEYS lock
--! ARGV field ntail tail
--! BATCH ttl
-- Renew a batch of group holds (grouplock.lua), as renew.lua says. KEYS: one group per hold; ARGV:
-- ttl in ms, then for each hold its owner, how many values follow, and the values. A hold is renewed
-- when its owner still names every value: each expire_time becomes ttl from now unless it has more
-- left, and the hash lives ttl at least (nothing of a hold no longer held is renewed).
--! INCLUDE grouplock.lua renew.lua
local ttl = tonumber(ARGV[1])
local now = now_ms()
local at = 2
return renew_holds(#KEYS, ttl, function(i)
  local group, owner, n = KEYS[i], ARGV[at], tonumber(ARGV[at + 1])
  local first, last = at + 2, at + 1 + n
  at = last + 1
  for j = first, last do
    if redis.pcall('hget', group, ARGV[j]) ~= owner then
      return false
    end
  end
  if ttl > 0 then
    local until_ms = now + ttl
    for j = first, last do
      local ef = expire_field(ARGV[j], owner)
      local e = tonumber(redis.call('hget', group, ef))
      if not e or e < until_ms then
        redis.call('hset', group, ef, until_ms)
      end
    end
    lengthen(group, ttl, 0)
  end
  return true
end)
