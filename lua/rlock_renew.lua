--! KEYS lock
--! ARGV field
-- Renew a batch of lock holds (hash field = owner); extend.lua comes first.
-- KEYS: one lock per hold; ARGV[1] ttl ms, ARGV[1+i] owner field of hold i.
-- Returns one integer per hold: 1 renewed, 0 no longer held. A key of the wrong type counts as not
-- held instead of failing the whole batch. ttl '0' checks the holds without renewing them.
local out = {}
for i = 1, #KEYS do
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if held == 1 then
    if ARGV[1] ~= '0' then
      extend(KEYS[i], ARGV[1]) -- a hold re-entered with a longer fixed lease keeps it
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
