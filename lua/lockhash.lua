-- Reading Redisson's lock hash (rlock, spinlock, fairlock): one field, its owner '<client id>:<n>'
-- (Redisson's '<uuid>:<thread id>'), whose value is the owner's hold count. A hash of other fields
-- (an application's, a read-write lock's, a group lock's) is no lock, and neither is a key of another
-- type: the call is refused (refuse.lua) before anything is written.
--
-- hold_count(lock, field): field's hold count in the lock hash lock, which exists (0: another owner
-- holds it); or nil and the refusal. One HSCAN, where a plain read would be one HGET: a lock hash
-- is always small, and HSCAN returns it whole.
local function hold_count(lock, field)
  local r = redis.pcall('hscan', lock, 0, 'count', 2)
  local e = r[2]
  if r.err or r[1] ~= '0' or #e ~= 2 or not string.find(e[1], ':%d+$') or not string.find(e[2], '^%d+$') then
    --! INCLUDE refuse.lua
    return nil, refuse(lock, nil, r.err)
  end
  if e[1] == field then
    return tonumber(e[2])
  end
  return 0
end
