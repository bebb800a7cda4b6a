--! KEYS lock memo
--! ARGV field lease rid
-- Extend one owner's hold of a lock kept as Redisson's lock hash (rlock, spinlock, fairlock), as
-- hold_extend.lua says; a name that holds anything but a lock hash is refused (lockhash.lua).
--! INCLUDE lockhash.lua hold_extend.lua
local lock, memo = KEYS[1], KEYS[2]
local field, lease, rid = ARGV[1], ARGV[2], ARGV[3]
return extend_hold(lock, field, lease, memo .. rid, foreign)
