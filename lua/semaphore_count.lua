--! KEYS semaphore
-- Reads a counting semaphore's available count and changes nothing (count.lua comes first): the
-- count, nil when the semaphore is not set, or the refusal of a key that holds anything else.
local n, refused = read_count(KEYS[1])
return refused or n
