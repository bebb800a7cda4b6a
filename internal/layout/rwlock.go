package layout

// RWLock is the read-write lock's layout (rwlock: Redisson's RReadWriteLock). The lock is a hash
// under N: Mode holds Read or Write, each reader's owner field its read hold count, and the writer's
// field, its owner followed by WriterSuffix, the write hold count; the hash's TTL is the longest
// lease; beside it:
var RWLock = struct {
	// Writers, "redisync_rwlock_writers:{N}" (sorted set, the library's own: Java readers ignore
	// it): under writer preference, each waiting writer "<owner><WriterSuffix>" scored by until when
	// (ms) it keeps new readers out.
	Writers string
	// Leases, "{N}:": the prefix of each read hold's lease key,
	// "{N}:<owner><LeaseInfix><k>" (k counts the owner's read holds from 1), whose TTL is its lease.
	Leases     string
	LeaseInfix string
	// Channel, "redisson_rwlock:{N}": Redisson's unlock messages ('0' a read unlock freed the lock,
	// '1' a write unlock or a downgrade).
	Channel string
	// Mode is the hash's field that says who holds: Read or Write.
	Mode, Read, Write string
	// WriterSuffix follows the writer's owner in its field.
	WriterSuffix string
}{
	Writers:      "redisync_rwlock_writers",
	Leases:       ":",
	LeaseInfix:   ":rwlock_timeout:",
	Channel:      "redisson_rwlock",
	Mode:         "mode",
	Read:         "read",
	Write:        "write",
	WriterSuffix: ":write",
}
