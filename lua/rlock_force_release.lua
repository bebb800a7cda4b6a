--! KEYS lock counter waiters clients channel wake memo
--! ARGV rid publish numsub
-- Release a lock whoever holds it. Returns 1 if it was held; the answer is kept under the memo,
-- which a re-sent request answers (MODE 1). A name that holds anything but a lock hash is refused,
-- and left as it is (lockhash.lua).
--! INCLUDE wake_records.lua rlock_wake.lua
local memo = KEYS[7] .. ARGV[1]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
if redis.call('exists', KEYS[1]) == 1 then
  --! INCLUDE lockhash.lua
  local _, refused = hold_count(KEYS[1], '')
  if refused then
    return refused
  end
end
local held = redis.call('del', KEYS[1])
if held == 1 then
  wake(ARGV[2], ARGV[3])
end
redis.call('set', memo, held, 'px', 60000)
return held
