-- Shared by the calls that, before they act, answer what a send of theirs made before kept under its
-- memo (once.lua), or refuse a name that holds another type; included after once.lua and the file
-- of the reader they pass (count.lua, rwlock_mode.lua, ...).
--
-- answered(memo, resent, read, key): true and the call's answer when it has one before it acts: the
-- reply kept under memo (read only in a send made again, MODE 1, when resent is true: a call whose
-- first sends are told apart by the trace they leave), or else the refusal read(key) gives. Otherwise
-- false and what read(key) read. read answers a value, or nil and the refusal (refuse.lua).
local function answered(memo, resent, read, key)
  if MODE == 1 or not resent then
    local found, reply = recall(memo)
    if found then
      return true, reply
    end
  end
  local v, refused = read(key)
  if refused then
    return true, refused
  end
  return false, v
end
