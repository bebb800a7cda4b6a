--! KEYS lock
--! ARGV owner tail
-- Reads a group lock (grouplock.lua) and changes nothing. owner '': 1 when anyone holds
-- any value of the tail (Redisson's isLocked); otherwise 1 when owner holds every value of it
-- (isHeldByThread), else 0. A name that holds anything but a group lock's hash is refused.
--! INCLUDE grouplock.lua
local lock = KEYS[1]
local owner = ARGV[1]
local refused = foreign(lock)
if refused then
  return refused
end
local now = now_ms()
for i = 2, #ARGV do
  if owner == '' then
    local holder = redis.call('hget', lock, ARGV[i])
    if holder then
      local e = tonumber(redis.call('hget', lock, expire_field(ARGV[i], holder)))
      if e and e >= now then
        return 1
      end
    end
  elseif not live_count(lock, ARGV[i], owner, now) then
    return 0
  end
end
if owner == '' then
  return 0
end
return 1
