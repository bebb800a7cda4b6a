--! KEYS semaphore channel waiters clients wake grants memo
--! ARGV permits publish numsub ifexists rid
-- Add permits to a counting semaphore (a release, or an adjustment that may make the count negative)
-- and hand them to waiters, or announce the new count (semaphore_wake.lua and once.lua come first).
-- permits: how many to add (may be negative); numsub: '' to wake as Redisson does; ifexists: '1' to
-- add only when the semaphore exists (Redisson's releaseIfExists).
-- Returns the new count, before any hand-over; nil when the semaphore does not exist and ifexists is
-- '1'. Exactly once by its memo (once.lua).
-- MODE 2 gives back the permits of an acquisition whose answer never came, rid being that
-- acquisition's: only if its memo says that it took them, once (the memo then says 'undone'), and
-- only to a semaphore that still exists.
local memo = KEYS[7] .. ARGV[5]
if MODE == 2 then
  local m = redis.call('get', memo)
  if m ~= 'a1' then
    if not m then -- not run yet: if it is still on its way, it must take nothing (once.lua)
      redis.call('set', memo, 'undone', 'px', 60000)
    end
    return false
  end
  redis.call('set', memo, 'undone', 'px', 60000)
else
  local found, reply = recall(memo)
  if found then
    return reply
  end
end
if ARGV[4] == '1' and redis.call('exists', KEYS[1]) == 0 then
  if MODE == 2 then
    return false
  end
  return remember(memo, nil)
end
local n = redis.pcall('incrby', KEYS[1], ARGV[1])
if type(n) == 'table' then
  -- Not a count (a key of another type, a string that is not a number): refused, unchanged.
  --! INCLUDE refuse.lua
  return refuse(KEYS[1], nil, n.err)
end
wake(KEYS[1], n, KEYS[3], KEYS[4], KEYS[6], KEYS[2], KEYS[5], ARGV[2], ARGV[3])
if MODE == 2 then
  return n
end
return remember(memo, n)
