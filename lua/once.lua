-- Exactly once (core/once.go): every script that changes state includes this file, and reads and
-- writes its call's memo through it alone. A memo is a key, the memos' prefix in KEYS completed by
-- the call's request id, under which a send keeps its reply for MEMO_TTL ms (the loader gives it, as
-- it gives MODE), or until the client, which has the answer, deletes it. The same call sent again
-- after a lost answer (MODE 1) answers that instead of acting again, and so does a first send that
-- reaches Redis after it (held up on the connection that failed, and run once a stalled server reads
-- it). A script whose call leaves a trace that tells its sends apart (the hold count the client
-- expects) keeps a memo only where the trace cannot tell, and reads it only then.
--
-- A memo holds a reply, 'n' (nil), 'i<integer>' or 'a<integer>,<integer>,...' (an array of
-- integers), or 'undone': the call was given back, and a send of it still on its way does nothing.
--
-- recall(memo): true and the reply kept under memo ('undone': nil), or false when there is none (a
-- first send, or the first send never ran). An undo (MODE 2), whose memo is the acquisition's that
-- it gives back, recalls nothing.
local function recall(memo)
  if MODE == 2 then
    return false
  end
  local m = redis.call('get', memo)
  if not m then
    return false
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

-- remember(memo, reply): keeps reply (nil, an integer, or an array of integers) under memo, and
-- returns it. An undo keeps nothing: its memo is the acquisition's, which says 'undone'.
local function remember(memo, reply)
  if MODE == 2 then
    return reply
  end
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
  redis.call('set', memo, m, 'px', MEMO_TTL)
  return reply
end

-- undone(memo, took): in an undo (MODE 2), true when there is nothing to give back of the acquisition
-- whose memo is memo: it was given back already, or it kept no memo and took is not true (took: what
-- the script finds of the acquisition's own trace, the hold count it would have made; nil where it
-- leaves none, and its memo alone tells). Otherwise false, and the memo says 'undone' from now on,
-- so that an undo sent again gives back nothing more. An acquisition that left neither (took nil) may
-- still be on its way: its memo says 'undone' too, and it takes nothing when it comes. In any other
-- mode it reads nothing, and answers false.
local function undone(memo, took)
  if MODE ~= 2 then
    return false
  end
  local m = redis.call('get', memo)
  if m == 'undone' or (not m and took == false) then
    return true
  end
  redis.call('set', memo, 'undone', 'px', MEMO_TTL)
  return not m and took == nil
end

-- give_up(memo): the call whose memo is memo is over, given up by its caller: a send of it still on
-- its way (held up on a connection that failed, or by a stalled server) finds 'undone' and does
-- nothing. A memo already kept stays: the call ran, and a give-back reads it.
local function give_up(memo)
  redis.call('set', memo, 'undone', 'px', MEMO_TTL, 'nx')
end

-- released(memo, count, held): what a release of one hold answers before it acts, or nil when it
-- goes on. count is the owner's hold count as the script finds it (nil: none), held the count the
-- client expects before the release. An undo that finds nothing to give back answers -3; an owner
-- that holds nothing -1, or 0 when this is a send again and the first released the last hold; a
-- send again (or a first send run after it) that finds held - 1, that count: the first released.
local function released(memo, count, held)
  if undone(memo, count == held) then
    return -3
  end
  if not count then
    if MODE == 1 and held == 1 then return 0 end -- the first send released the last hold
    return -1
  end
  if MODE ~= 2 and count == held - 1 then
    return count -- the first send released it
  end
  return nil
end
