package layout

// Group is the group lock's layout (multilock.Group: Redisson's RedissonFasterMultiLock). The group
// is a hash under N, and each value held has three fields (lua/grouplock.lua): "<value>" its owner
// "<client id>:<owner id>", "<value>:<owner><Expire>" until when that owner holds it (ms, by the
// server's clock), and "<value>:<owner><Count>" how many times. <value> is the value's field name
// (multilock.GroupField), without colons. The hash's TTL is the longest lease given.
var Group = struct {
	// Channel is Lock's: releases that free a value publish '0' there.
	Channel string
	// The suffixes of a value's fields.
	Expire, Count string
}{
	Channel: Lock.Channel,
	Expire:  ":expire_time",
	Count:   ":lock_count",
}
