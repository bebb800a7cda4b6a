--! KEYS semaphore waiters clients grants memo
--! ARGV permits window tag client linger rid
-- Take permits from a counting semaphore (Redisson's layout: a string holding the available count; a
-- missing key counts as 0). wake_records.lua and once.lua come first.
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
-- A release may have handed permits to this waiter since any try that recorded it, this one's
-- other send included (its answer lost, or this a first send that the network held up): the try
-- takes them, or a second grant to the waiter would take the place of the first.
if ARGV[3] ~= '' and redis.call('hdel', KEYS[4], ARGV[3]) == 1 then
  redis.call('zrem', KEYS[2], ARGV[3]) -- recorded again since, by this try's other send
  return remember(memo, {1}) -- a release handed them over (semaphore_wake.lua)
end
local v = redis.call('get', KEYS[1])
local available = 0
if v ~= false then
  available = tonumber(v)
  if available == nil then
    return redis.error_reply('ERR semaphore count is not an integer')
  end
end
if v ~= false and available >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  if ARGV[3] ~= '' then
    redis.call('zrem', KEYS[2], ARGV[3])
  end
  return remember(memo, {1})
end
if ARGV[2] == '0' then
  return {0}
end
return {0, record(KEYS[2], KEYS[3], ARGV[3], ARGV[2], ARGV[4], ARGV[5])}
