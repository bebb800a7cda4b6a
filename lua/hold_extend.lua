-- extend_hold(lock, field, lease, memo, foreign): the body of the scripts that extend one owner's
-- hold of a lock kept as a hash (lock_extend.lua, rwlock_write_extend.lua): the lock lives at least
-- lease ms from now when field's owner holds it, and is never shortened (another hold of the owner may
-- have been promised more). Replies 1, or 0 when the owner does not hold it, or foreign(lock)'s
-- refusal of a name that holds anything but the lock's hash, before anything is written.
--
-- Exactly once (core/once.go): the reply is kept under the call's memo, which a send made again
-- after a lost answer, or a first send that reaches Redis after it, answers instead of extending
-- again from a later now.
--! INCLUDE once.lua extend.lua
local function extend_hold(lock, field, lease, memo, foreign)
  local found, reply = recall(memo)
  if found then return reply end
  if redis.pcall('hexists', lock, field) ~= 1 then
    return foreign(lock) or remember(memo, 0)
  end
  extend(lock, lease)
  return remember(memo, 1)
end
