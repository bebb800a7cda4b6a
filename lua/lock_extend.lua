--! KEYS lock memo
--! ARGV field lease rid
-- Extend one owner's hold of a lock hash (once.lua and extend.lua come first): the lock lives at
-- least lease ms from now when field's owner holds it, and is never shortened (another hold of the
-- owner may have been promised more). Replies 1, or 0 when the owner does not hold it.
--
-- Exactly once (core/once.go): the reply is kept under the call's memo, which a send made again
-- after a lost answer, or a first send that reaches Redis after it, answers instead of extending
-- again from a later now.
local memo = KEYS[2] .. ARGV[3]
local found, reply = recall(memo)
if found then
  return reply
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return remember(memo, 0)
end
extend(KEYS[1], ARGV[2])
return remember(memo, 1)
