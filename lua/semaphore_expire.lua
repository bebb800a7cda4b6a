--! KEYS semaphore
--! ARGV ms
-- Give a counting semaphore a time to live. Returns 1 when it exists, 0 when it does not; a key that
-- holds anything but a count is refused, and left as it is.
--! INCLUDE count.lua
local semaphore = KEYS[1]
local ms = ARGV[1]
local n, refused = read_count(semaphore)
if refused then
  return refused
end
return redis.call('pexpire', semaphore, ms)
