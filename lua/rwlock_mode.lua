-- Reading a read-write lock's hash (Redisson's RReadWriteLock: 'mode' is 'read' or 'write'). A key of
-- another type, or a hash without a mode (an application's, a lock's, a group lock's), is no
-- read-write lock: the call is refused (refuse.lua) before anything is written.
--
-- rwlock_mode(lock): the lock's mode, false when there is no lock; or nil and the refusal.
local function rwlock_mode(lock)
  local mode = redis.pcall('hget', lock, 'mode')
  if type(mode) == 'table' or (mode and mode ~= 'read' and mode ~= 'write') or (not mode and redis.call('exists', lock) == 1) then
    --! INCLUDE refuse.lua
    return nil, refuse(lock, nil, type(mode) == 'table' and mode.err or nil)
  end
  return mode
end

-- foreign(lock): the refusal of a name that holds anything but a read-write lock, or nil.
local function foreign(lock)
  local _, refused = rwlock_mode(lock)
  return refused
end
