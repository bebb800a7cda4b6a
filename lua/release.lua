-- Shared by the releases of one hold of a lock hash (rlock_release.lua, fairlock_release.lua).
--
-- settled(memo, lock, count, held): once.lua's released, where an owner without a count (count nil)
-- in a name that holds anything but a lock hash is refused first (lockhash.lua), before anything is
-- written.
local function settled(memo, lock, count, held)
  if not count and redis.call('exists', lock) == 1 then
    --! INCLUDE lockhash.lua
    local _, refused = hold_count(lock, '')
    if refused then
      return refused
    end
  end
  return released(memo, count, held)
end
