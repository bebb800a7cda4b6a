--! KEYS lock
--! ARGV field
-- Renew a batch of write holds.
-- KEYS: one lock per hold; ARGV[1] ttl ms, ARGV[1+i] write field of hold i.
-- Returns one integer per hold: 1 renewed, 0 no longer held. The TTL is never shortened: a
-- re-entered or downgraded hold may have been given more. A key of the wrong type counts as not held.
-- ttl 0 checks the holds without renewing them.
local ttl = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS do
  if redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    if ttl > 0 and redis.call('pttl', KEYS[i]) < ttl then
      redis.call('pexpire', KEYS[i], ttl)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
