package layout

// Lock is the reentrant lock's layout (rlock and spinlock: Redisson's RLock, RSpinLock and
// RFencedLock). The lock is a hash under N from each owner "<client id>:<owner id>" (Redisson's
// "<client id>:<thread id>") to its hold count, whose TTL is the lease; beside it:
var Lock = struct {
	// Counter, "redisson_lock_token:{N}": the last fencing token given, a number without expiry
	// (Redisson's RFencedLock); the fair lock shares it.
	Counter string
	// Waiters, "redisync_lock_waiters:{N}" (sorted set; lua/rlock_wake.lua, lua/record.lua): a
	// waiter's record is the member "<client id>:<owner id>:<attempt>:<lease ms>:<fenced 0|1>" (its
	// first two parts its owner field) scored by the time in microseconds by which it will have
	// tried again: a score in the past is a waiter that has gone. A score of 0 or below is a grant's
	// mark: a release handed the lock to that waiter (minus its fencing token, 0 unfenced), which
	// holds it now or held it since. Members that start with Turn are no waiter.
	Waiters string
	// Clients, "redisync_lock_clients:{N}" (sorted set): the Clients that listen for hand-overs,
	// each its id scored by until when (ms) it may still listen. No waiter.
	Clients string
	// Channel, "redisson_lock__channel:{N}": Redisson's unlock messages ('0' wakes a waiter); the
	// group lock's releases go there too.
	Channel string
	// Wake, "redisync_lock__wake:{N}:<client id>": each Client's own channel, where a release tells
	// it "@<record> <token> <score>" when it handed the lock to one of its waiters.
	Wake string
	// UnlockLatch, "redisson_unlock_latch:{N}:...": Redisson's own unlock bookkeeping, which the
	// library neither reads nor writes; a side key all the same.
	UnlockLatch string
	// Turn starts the members of Waiters that are the Java waiters' turns, "~java" and "~owed",
	// scored by a time (lua/rlock_wake.lua): no waiter.
	Turn string
}{
	Counter:     "redisson_lock_token",
	Waiters:     "redisync_lock_waiters",
	Clients:     "redisync_lock_clients",
	Channel:     "redisson_lock__channel",
	Wake:        "redisync_lock__wake:",
	UnlockLatch: "redisson_unlock_latch",
	Turn:        "~",
}
