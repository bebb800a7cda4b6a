--! KEYS lock
--! ARGV field
--! BATCH ttl
-- Renew a batch of lock holds (hash field = owner). KEYS: one lock per hold; ARGV: ttl in ms, then
-- the owner field of each hold.
-- Returns one integer per hold: 1 renewed, 0 no longer held. A key of the wrong type counts as not
-- held instead of failing the whole batch. ttl '0' checks the holds without renewing them.
--! INCLUDE extend.lua
local ttl = ARGV[1]
local out = {}
for i = 1, #KEYS do
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if held == 1 then
    if ttl ~= '0' then
      extend(KEYS[i], ttl) -- a hold re-entered with a longer fixed lease keeps it
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
