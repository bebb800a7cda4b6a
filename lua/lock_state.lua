--! KEYS lock
--! ARGV field
-- Reads a lock kept as Redisson's lock hash (rlock, spinlock, fairlock) and changes nothing: {pttl,
-- the hold count of field} ({-2, 0} when free), or the refusal of a key that is no lock hash
-- (lockhash.lua).
--! INCLUDE lockhash.lua
local lock = KEYS[1]
local field = ARGV[1]
local ttl = redis.call('pttl', lock)
if ttl == -2 then
  return {-2, 0}
end
local count, refused = hold_count(lock, field)
if refused then
  return refused
end
return {ttl, count}
