--! KEYS lock queue deadlines counter channel records memo
--! ARGV rid publish slot numsub
-- Release a fair lock whoever holds it, and wake (or hand the lock to) the first waiter that is still
-- there (fairlock_wake.lua, with the order of KEYS). Returns 1 if the lock was held; the answer is
-- kept under the memo, which a re-sent request answers (MODE 1). A name that holds anything but a
-- lock hash is refused, and left as it is (lockhash.lua).
--! INCLUDE fairlock_wake.lua lockhash.lua once.lua answered.lua
local lock, memo = KEYS[1], KEYS[7]
local rid, publish, slot, numsub = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
memo = memo .. rid
local done, reply = answered(memo, MODE == 1, function() return nil, foreign(lock) end)
if done then return reply end
local held = redis.call('del', lock)
wake(slot, publish, numsub)
return remember(memo, held)
