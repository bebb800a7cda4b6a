--! KEYS latch
-- Reads a countdown latch's count and changes nothing (count.lua comes first): the count, nil when
-- the latch is not set, or the refusal of a key that is not a latch (not a whole number above 0).
local n, refused = read_count(KEYS[1])
if refused then
  return refused
elseif n and n < 1 then
  --! INCLUDE refuse.lua
  return refuse(KEYS[1], 'latch')
end
return n
