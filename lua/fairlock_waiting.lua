--! KEYS lock queue
-- Counts the waiters of a fair lock and changes nothing: the queue's length, or the refusal of a name
-- that holds anything but a lock hash (lockhash.lua), or of a queue that is not a list.
--! INCLUDE lockhash.lua
local lock, queue = KEYS[1], KEYS[2]
local refused = foreign(lock)
if refused then
  return refused
end
local n = redis.pcall('llen', queue)
if type(n) == 'table' then
  --! INCLUDE refuse.lua
  return refuse(queue, nil, n.err)
end
return n
