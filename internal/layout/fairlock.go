package layout

// FairLock is the fair lock's layout (fairlock: Redisson's RFairLock). The lock is the reentrant
// lock's hash under N (Lock), with Lock's fencing Counter; beside it:
var FairLock = struct {
	// Queue, "redisson_lock_queue:{N}" (list): the waiting owners, the head first.
	Queue string
	// Deadlines, "redisson_lock_timeout:{N}" (sorted set): each waiting owner scored by the time
	// (ms) by which it must try again or lose its place.
	Deadlines string
	// Counter is Lock's.
	Counter string
	// Channels, "redisson_lock__channel:{N}:<owner>": each waiter's own channel, where a release
	// wakes the head of the queue (Redisson's '0'), or tells it "@<tag> <token> <score>" when it
	// handed the lock to it.
	Channels string
	// Records, "redisync_fair_waiters:{N}" (hash; lua/fairlock_wake.lua): owner -> "<score us> <tag>
	// <lease ms> <fenced 0|1>", the time of the waiter's last try, or "<GrantMark><token> <tag>", a
	// grant's mark: the owner was handed the lock and holds it until its release removes the mark.
	// The fair lock's waiters are its Queue, each with its deadline.
	Records string
	// GrantMark starts a record that is a grant's mark.
	GrantMark string
}{
	Queue:     "redisson_lock_queue",
	Deadlines: "redisson_lock_timeout",
	Counter:   Lock.Counter,
	Channels:  Lock.Channel + ":",
	Records:   "redisync_fair_waiters",
	GrantMark: "-",
}
