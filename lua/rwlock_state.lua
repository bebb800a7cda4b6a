--! KEYS lock
--! ARGV field
-- Reads a read-write lock and changes nothing: {pttl, the hold count of field, mode (0 free, 1 read,
-- 2 write), the number of the hash's fields} ({-2, 0, 0, 0} when free), or the refusal of a key that
-- is no read-write lock (refuse.lua): a hash whose 'mode' is neither 'read' nor 'write', or a key of
-- another type.
local lock = KEYS[1]
local field = ARGV[1]
local ttl = redis.call('pttl', lock)
if ttl == -2 then
  return {-2, 0, 0, 0}
end
local f = redis.pcall('hmget', lock, 'mode', field)
if f.err or (f[1] ~= 'read' and f[1] ~= 'write') then
  --! INCLUDE refuse.lua
  return refuse(lock)
end
local mode = 1
if f[1] == 'write' then
  mode = 2
end
return {ttl, tonumber(f[2]) or 0, mode, redis.call('hlen', lock)}
