--! KEYS lock counter waiters clients channel wake memo
--! ARGV rid publish numsub
-- Release a lock whoever holds it. Returns 1 if it was held; the answer is kept under the memo,
-- which a re-sent request answers (MODE 1). A name that holds anything but a lock hash is refused,
-- and left as it is (lockhash.lua).
--! INCLUDE wake_records.lua rlock_wake.lua lockhash.lua once.lua answered.lua
local lock, memo = KEYS[1], KEYS[7]
local rid, publish, numsub = ARGV[1], ARGV[2], ARGV[3]
memo = memo .. rid
local done, reply = answered(memo, MODE == 1, function() return nil, foreign(lock) end)
if done then return reply end
local held = redis.call('del', lock)
if held == 1 then
  wake(publish, numsub)
end
return remember(memo, held)
