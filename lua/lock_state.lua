--! KEYS lock
--! ARGV field
-- Reads a lock kept as Redisson's lock hash (rlock, spinlock, fairlock) and changes nothing (lockhash.lua
-- comes first): {pttl, the hold count of field} ({-2, 0} when free), or the refusal of a key that is
-- no lock hash.
local ttl = redis.call('pttl', KEYS[1])
if ttl == -2 then
  return {-2, 0}
end
local count, refused = hold_count(KEYS[1], ARGV[1])
if refused then
  return refused
end
return {ttl, count}
