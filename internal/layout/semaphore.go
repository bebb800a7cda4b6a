package layout

// Semaphore is the counting semaphore's layout (semaphore.Semaphore: Redisson's RSemaphore). The
// semaphore is a string under N, the available permits, without expiry; beside it:
var Semaphore = struct {
	// Channel, "redisson_sc:{N}": Redisson's release messages, the count left.
	Channel string
	// Waiters, "redisync_semaphore_waiters:{N}" (sorted set; lua/semaphore_wake.lua): a waiter's
	// record "<client id>:<attempt>:<permits wanted>" scored, as a lock's, by the time in
	// microseconds by which it will have tried again.
	Waiters string
	// Clients, "redisync_semaphore_clients:{N}" (sorted set): the Clients that listen for
	// hand-overs, as Lock's. No waiter.
	Clients string
	// Wake, "redisync_semaphore__wake:{N}:<client id>": each Client's own channel, where a release
	// tells it "@<record> 0 <score>" when it handed permits to one of its waiters.
	Wake string
	// Grants, "redisync_semaphore_grants:{N}" (hash): a hand-over moves the waiter's record here,
	// record -> its score, and the waiter's Client deletes it once told. No waiter.
	Grants string
}{
	Channel: "redisson_sc",
	Waiters: "redisync_semaphore_waiters",
	Clients: "redisync_semaphore_clients",
	Wake:    "redisync_semaphore__wake:",
	Grants:  "redisync_semaphore_grants",
}

// Expirable is the permit-expirable semaphore's layout (semaphore.Expirable: Redisson's
// RPermitExpirableSemaphore). The available permits are a string under N (a missing key counts as
// 0), and its Channel is Semaphore's; beside it:
var Expirable = struct {
	// Permits, "{N}:timeout" (sorted set; lua/semaphore_expirable.lua): each acquired permit's id,
	// 16 random bytes, scored by when it expires (ms, by the server's clock), or Never.
	Permits string
	// Never is the score of a permit without lease (Redisson's).
	Never int64
}{
	Permits: ":timeout",
	Never:   922337203685477,
}
