--! KEYS semaphore waiters clients grants memo
--! ARGV permits window tag client linger rid
-- Take permits from a counting semaphore (Redisson's layout: a string holding the available count; a
-- missing key counts as 0). record.lua, count.lua and once.lua come first. A key that holds anything
-- but a count, or a side key of another type, is refused before anything is written.
-- permits: how many; window: ms within which this waiter will try again ('0': it will not wait,
-- record nothing); tag: the waiter's record ('' before it listens); client: this client's id; linger:
-- ms for which the client listens after its last waiter left; rid: the acquisition's request id.
-- Returns {1} when they were taken (or a release had taken them for this waiter), {0} when fewer are
-- available, {0, score} when fewer are available and the waiter was recorded with that score. A
-- taking is remembered under the memo, which a re-sent try answers (MODE 1); a try of a waiter that
-- left ('undone', semaphore_forget.lua) answers nil and does nothing.
local memo = KEYS[5] .. ARGV[6]
local found, reply = recall(memo)
if found then
  return reply
end
-- Any try of the wait may have recorded the waiter, this one's other send included (its answer lost,
-- or this a first send that the network held up), and a release may have handed it permits since:
-- the try takes them, or a second grant to the waiter would take the place of the first.
local recorded = ARGV[3] ~= ''
if recorded then
  local granted = redis.pcall('hdel', KEYS[4], ARGV[3])
  if type(granted) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[4], nil, granted.err)
  elseif granted == 1 then
    redis.pcall('zrem', KEYS[2], ARGV[3]) -- recorded again since, by this try's other send
    return remember(memo, {1}) -- a release handed them over (semaphore_wake.lua)
  end
end
local available, refused = read_count(KEYS[1])
if refused then
  return refused
end
if available and available >= tonumber(ARGV[1]) then
  -- The record first: a records key of another type is refused before the count is written.
  local failed = recorded and redis.pcall('zrem', KEYS[2], ARGV[3])
  if type(failed) == 'table' then
    --! INCLUDE refuse.lua
    return refuse(KEYS[2], nil, failed.err)
  end
  redis.call('decrby', KEYS[1], ARGV[1])
  if recorded and redis.call('exists', KEYS[2]) == 0 then
    -- The last recorded waiter: the clients' record, which only tells who listens, goes too.
    redis.pcall('zremrangebyrank', KEYS[3], 0, -1)
  end
  return remember(memo, {1})
end
if ARGV[2] == '0' then
  return {0}
end
local score, refused = record(KEYS[2], KEYS[3], ARGV[3], ARGV[2], ARGV[4], ARGV[5])
return refused or {0, score}
