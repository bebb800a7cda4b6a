--! KEYS lock queue deadlines counter channel records memo
--! ARGV rid publish slot numsub
-- Release a fair lock whoever holds it, and wake (or hand the lock to) the first waiter that is still
-- there (fairlock_wake.lua comes first, with the order of KEYS). Returns 1 if the lock was held; the
-- answer is kept under the memo, which a re-sent request answers (MODE 1).
local memo = KEYS[7] .. ARGV[1]
if MODE == 1 then
  local done = redis.call('get', memo)
  if done then return tonumber(done) end
end
if redis.call('exists', KEYS[1]) == 1 then
  --! INCLUDE lockhash.lua
  local _, refused = hold_count(KEYS[1], '')
  if refused then
    return refused -- no lock hash: left as it is
  end
end
local held = redis.call('del', KEYS[1])
wake(tonumber(ARGV[3]), ARGV[2], ARGV[4])
redis.call('set', memo, held, 'px', 60000)
return held
