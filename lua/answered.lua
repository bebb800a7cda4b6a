-- Shared by the calls that, before they act, answer what a send of theirs made before kept under its
-- memo (once.lua), or refuse a name that holds another type; included after once.lua and the file
-- of the reader they pass (count.lua, rwlock_mode.lua, ...).
--
-- answered(memo, look, read, key): true and the call's answer when it has one before it acts: the
-- reply kept under memo, looked for only when look is true (MODE == 1 for a call whose first sends
-- are told apart by the trace they leave, so that only a send made again looks), or else the refusal
-- read(key) gives. Otherwise false and what read(key) read. read answers a value, or nil and the
-- refusal (refuse.lua).
local function answered(memo, look, read, key)
  if look then
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
