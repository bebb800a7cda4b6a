--! KEYS lock queue
-- Counts the waiters of a fair lock and changes nothing (lockhash.lua comes first): the queue's
-- length, or the refusal of a name that holds anything but a lock hash, or of a queue that is not a
-- list.
if redis.call('exists', KEYS[1]) == 1 then
  local _, refused = hold_count(KEYS[1], '')
  if refused then
    return refused
  end
end
local n = redis.pcall('llen', KEYS[2])
if type(n) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(KEYS[2], nil, n.err)
end
return n
