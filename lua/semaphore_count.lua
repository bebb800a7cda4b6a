--! KEYS semaphore
-- Reads a counting semaphore's available count and changes nothing: the count, nil when the
-- semaphore is not set, or the refusal of a key that holds anything else.
--! INCLUDE count.lua
local semaphore = KEYS[1]
local n, refused = read_count(semaphore)
return refused or n
