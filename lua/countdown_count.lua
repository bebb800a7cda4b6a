--! KEYS latch
-- Reads a countdown latch's count and changes nothing: the count, nil when the latch is not set, or
-- the refusal of a key that is not a latch (not a whole number above 0).
--! INCLUDE count.lua
local latch = KEYS[1]
local n, refused = read_latch(latch)
if refused then
  return refused
end
return n
