--! KEYS lock
--! ARGV owner tail
-- Reads a group lock (grouplock.lua comes first) and changes nothing. owner '': 1 when anyone holds
-- any value of the tail (Redisson's isLocked); otherwise 1 when owner holds every value of it
-- (isHeldByThread), else 0. A name that holds anything but a group lock's hash is refused.
local group, owner = KEYS[1], ARGV[1]
local refused = foreign(group)
if refused then
  return refused
end
local now = now_ms()
for i = 2, #ARGV do
  if owner == '' then
    local holder = redis.call('hget', group, ARGV[i])
    if holder then
      local e = tonumber(redis.call('hget', group, expire_field(ARGV[i], holder)))
      if e and e >= now then
        return 1
      end
    end
  elseif not live_count(group, ARGV[i], owner, now) then
    return 0
  end
end
if owner == '' then
  return 0
end
return 1
