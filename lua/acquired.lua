-- Shared by the acquisitions of a lock hold (rlock_try.lua, rlock_acquire.lua,
-- rwlock_write_acquire.lua), which tell their sends apart by the hold count they make (rlock_try.lua
-- says how). They include it in the branches that run when a send of the same call may have run
-- before this one: this is a send made again (MODE 1), or it finds a count the client does not expect
-- (MODE 0).
--
-- acquired(memo, held, lock, field, count, counter, waiters, tag): what that send answered: true and
-- the reply it kept under memo; or true and {1, count, token} when the owner's hold count (count, or
-- nil: field of lock, read after the memo) is the one it made, held + 1, token being the fencing
-- counter's (counter false: no fencing), and the waiter's record tag in waiters (nil: none) removed,
-- or a release would hand the lock to the waiter that holds it. Otherwise false: none acquired.
local function acquired(memo, held, lock, field, count, counter, waiters, tag)
  local found, reply = recall(memo)
  if found then
    return true, reply
  end
  count = count or tonumber(redis.call('hget', lock, field))
  if count ~= held + 1 then
    return false
  end
  if waiters then
    redis.call('zrem', waiters, tag)
  end
  return true, {1, count, counter and tonumber(redis.call('get', counter)) or 0}
end
