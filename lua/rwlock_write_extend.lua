--! KEYS lock memo
--! ARGV field lease rid
-- Extend one owner's write hold of a read-write lock (field: 'OWNER:write'), as hold_extend.lua
-- says; a name that holds anything but a read-write lock is refused (rwlock_mode.lua).
--! INCLUDE rwlock_mode.lua hold_extend.lua
local lock, memo = KEYS[1], KEYS[2]
local field, lease, rid = ARGV[1], ARGV[2], ARGV[3]
return extend_hold(lock, field, lease, memo .. rid, foreign)
