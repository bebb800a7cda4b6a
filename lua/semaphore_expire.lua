--! KEYS semaphore
--! ARGV ms
-- Give a counting semaphore a time to live (count.lua comes first). Returns 1 when it exists, 0 when
-- it does not; a key that holds anything but a count is refused, and left as it is.
local n, refused = read_count(KEYS[1])
if refused then
  return refused
end
return redis.call('pexpire', KEYS[1], ARGV[1])
