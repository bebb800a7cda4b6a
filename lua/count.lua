-- Reading a count kept as a string (a semaphore's, a latch's): refuse.lua comes with it, where it
-- refuses.
--
-- read_count(key): the count at key (nil when there is no key), or false and the refusal when key
-- holds anything but a whole number: a key of another type, or a string that is not a number.
local function read_count(key)
  local v = redis.pcall('get', key)
  if type(v) == 'table' then
    --! INCLUDE refuse.lua
    return false, refuse(key, nil, v.err)
  end
  if v and not string.find(v, '^%-?%d+$') then
    --! INCLUDE refuse.lua
    return false, refuse(key, 'text')
  end
  return tonumber(v)
end
