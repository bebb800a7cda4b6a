-- Exactly once for the scripts whose effect leaves no trace to tell a second send by (a count of
-- permits, of a latch): see core/once.go. A send keeps its reply under the call's memo (the memo
-- prefix in KEYS and the call's request id) for 60 s, or until the client, which has the answer,
-- deletes it; the same call sent again after a lost answer (MODE 1) answers that instead of acting
-- again, and so does a first send that reaches Redis after it (held up on the connection that
-- failed, and run once a stalled server reads it).
--
-- recall(memo): true and the reply kept under memo, or false when there is none (a first send, or
-- the first send never ran).
-- remember(memo, reply): keeps reply (nil, an integer, or an array of integers) under memo, and
-- returns it.
local function recall(memo)
  if MODE == 2 then
    return false
  end
  local m = redis.call('get', memo)
  if not m then
    return false
  end
  if m == 'undone' then
    return true, nil -- given back after its caller gave up: a send still on its way does nothing
  end
  local kind, rest = string.sub(m, 1, 1), string.sub(m, 2)
  if kind == 'i' then
    return true, tonumber(rest)
  elseif kind == 'a' then
    local out = {}
    for n in string.gmatch(rest, '[^,]+') do
      out[#out + 1] = tonumber(n)
    end
    return true, out
  end
  return true, nil
end

local function remember(memo, reply)
  local m = 'n'
  if type(reply) == 'number' then
    m = 'i' .. string.format('%.0f', reply)
  elseif type(reply) == 'table' then
    local parts = {}
    for i, n in ipairs(reply) do
      parts[i] = string.format('%.0f', n)
    end
    m = 'a' .. table.concat(parts, ',')
  end
  redis.call('set', memo, m, 'px', 60000)
  return reply
end
