--! KEYS lock
--! ARGV field ntail tail
-- Renew a batch of group holds (grouplock.lua comes first). KEYS: one group per hold; ARGV[1] ttl ms,
-- then for each hold its owner, how many values follow, and the values. A hold is renewed when its
-- owner still names every value: each expire_time becomes ttl from now unless it has more left, and
-- the hash lives ttl at least. Returns one integer per hold: 1 renewed, 0 no longer held (nothing of
-- it is renewed then). A key of the wrong type counts as not held instead of failing the batch. ttl 0
-- checks the holds without renewing them.
local ttl = tonumber(ARGV[1])
local now = now_ms()
local out, at = {}, 2
for i = 1, #KEYS do
  local group, owner, n = KEYS[i], ARGV[at], tonumber(ARGV[at + 1])
  local first, last = at + 2, at + 1 + n
  at = last + 1
  local held = true
  for j = first, last do
    if redis.pcall('hget', group, ARGV[j]) ~= owner then
      held = false
      break
    end
  end
  if held and ttl > 0 then
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
  if held then
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
