package main

// method is a method of a public lock type that forwards to its core.Lock. In body, {r} stands for
// the receiver and {l} for its core.Lock.
type method struct {
	name, sig, body string
	doc             string // the contract, unless a face words it its own way
}

// methods are written in this order; go doc lists them by name.
var methods = []method{
	{"Name", "() string", "return {l}.Name()", `
Name returns the lock's name, which is also its key in Redis.`},
	{"Lock", "(ctx context.Context) (context.Context, error)", "return {l}.Lock(ctx)", `
Lock waits until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx that
carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work done
under the lock so that the work stops if the lock is lost.`},
	{"TryLock", "(ctx context.Context, wait time.Duration) (context.Context, error)", "return {l}.TryLock(ctx, wait)", `
TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
acquired within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier;
its deadline is never the lock's lease.`},
	{"LockFor", "(ctx context.Context, lease time.Duration) (context.Context, error)", "return {l}.LockFor(ctx, lease)", `
LockFor is Lock with a lease of its own for this acquisition (Redisson's lock(leaseTime, unit)):
lease > 0 is a fixed lease, as WithLease gives, and 0 the Client's watchdog, whatever the lock's
options. A re-entry never shortens what an outer hold was promised: the lock's TTL only grows.`},
	{"TryLockFor", "(ctx context.Context, wait, lease time.Duration) (context.Context, error)", "return {l}.TryLockFor(ctx, wait, lease)", `
TryLockFor is TryLock with a lease of its own for this acquisition (Redisson's tryLock(waitTime,
leaseTime, unit)): see LockFor.`},
	{"Extend", "(ctx context.Context, lease time.Duration) error", "return {l}.Extend(ctx, lease)", `
Extend makes the hold of ctx's owner last at least lease from now (Redisson's expire on a held
lock), and moves the deadline of ctx's hold, when its lease is fixed, to the new end. It never
shortens a hold. It returns an error matching redisync.ErrNotHeld, and changes nothing, when the
owner does not hold the lock or ctx's hold has ended, and it acts once whatever the network
loses. On a hold the watchdog keeps, the TTL lasts at least lease and the renewals go on.`},
	{"IsHeldBy", "(ctx context.Context, owner int64) (bool, error)", "return {l}.IsHeldBy(ctx, owner)", `
IsHeldBy reports whether owner, an owner id of this Client (redisync.OwnerID of a hold's ctx),
holds the lock (Redisson's isHeldByThread, an owner id standing for the thread id).`},
	{"Token", "(ctx context.Context) (int64, bool)", "return {l}.Token(ctx)", `
Token returns the fencing token of the acquisition that ctx came from (see WithFencing).`},
	{"Unlock", "(ctx context.Context) error", "return {l}.Unlock(ctx)", `
Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
Unlock. It returns an error matching redisync.ErrNotHeld, and changes nothing, when ctx carries no
hold of the lock (never did, released it, or its lease ended), and redisync.ErrNotInnermost when
holds taken inside it are still open. It releases even when ctx has been cancelled.`},
	{"ForceUnlock", "(ctx context.Context) (bool, error)", "return {l}.ForceUnlock(ctx)", `
ForceUnlock frees the lock whoever holds it, and wakes a waiter. It reports whether the lock was
held. Holders on this Client see their ctx end with redisync.ErrLost at once; holders elsewhere at
their next renewal.`},
	{"IsLocked", "(ctx context.Context) (bool, error)", "return {l}.IsLocked(ctx)", `
IsLocked reports whether any owner holds the lock.`},
	{"IsHeld", "(ctx context.Context) (bool, error)", "return {l}.IsHeld(ctx)", `
IsHeld reports whether ctx's owner holds the lock (Redisson's isHeldByCurrentThread).`},
	{"HoldCount", "(ctx context.Context) (int, error)", "return {l}.HoldCount(ctx)", `
HoldCount returns how many times ctx's owner holds the lock (0 when it does not). Like Unlock, it
answers even when ctx has ended, since ctx here names the owner.`},
	{"TTL", "(ctx context.Context) (time.Duration, error)", "return {l}.TTL(ctx)", `
TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
when it is held without expiry (only a foreign writer can do that).`},
	{"Do", "(ctx context.Context, fn func(ctx context.Context) error) error", "return core.Locked(ctx, {r}.Lock, {r}.Unlock, fn)", `
Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
When fn panics, the lock is released (and fn's ctx ends with redisync.ErrReleased) before the
panic goes on to the caller.`},
}

// setter is an option that sets a field of core.LockOptions, which the package's options embed.
type setter struct {
	name, params, set string // set: the assignment, o being the options
	doc               string
}

var setters = []setter{
	{"WithLease", "d time.Duration", "o.Lease = d", `
WithLease gives every acquisition a fixed lease: the lock frees itself after d unless unlocked
before, with no renewal, and the ctx Lock returns has the lease's end (less 1% + 2 ms for clock
drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the lock while it is
held and lets it expire within the watchdog timeout when the process dies.`},
	{"NonReentrant", "", "o.NonReentrant = true", `
NonReentrant makes re-entry an error: an owner that locks again gets redisync.ErrAlreadyHeld, and
its hold is unchanged.`},
	{"WithFencing", "", "o.Fenced = true", `
WithFencing makes every acquisition, re-entry included, take a fencing token from a counter in
Redis (Redisson's RFencedLock layout): a number that grows with each acquisition, which a store can
use to reject writes from a holder that has been overtaken. Read it with Token. The counter is a
key without expiry, one per lock name.`},
}

// face is what one package's file holds: the methods of its public lock type and its option setters.
type face struct {
	pkg, file    string
	typ, recv    string            // the public type and its receiver's name; its core.Lock is recv.l
	option, opts string            // the option type and the options struct it configures
	omit         []string          // methods and setters the package writes itself, or has not
	docs         map[string]string // the package's own wording, where its contract differs
}

var faces = []face{
	{pkg: "rlock", file: "lock_gen.go", typ: "Lock", recv: "l", option: "Option", opts: "options"},

	{pkg: "spinlock", file: "lock_gen.go", typ: "Lock", recv: "l", option: "Option", opts: "options",
		docs: map[string]string{
			"WithLease": `
WithLease gives every acquisition a fixed lease: the lock frees itself after d unless unlocked
before, with no renewal, and the ctx Lock returns has the lease's end (less 1% + 2 ms for clock
drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the lock while it is
held.`,
			"WithFencing": `
WithFencing makes every acquisition, re-entry included, take a fencing token from the lock's
counter in Redis, the one rlock.WithFencing uses (Redisson's RFencedLock layout). Read it with
Token.`,
			"Lock": `
Lock tries until it acquires the lock, ctx ends, or the Client is closed, sleeping between tries
as the lock's Backoff says. It returns a ctx that carries the owner and ends when the lock stops
being held; pass it to Unlock, and to the work done under the lock.`,
			"TryLock": `
TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
acquired within wait, its last sleep cut short to try once more at the bound; with wait 0 it
tries once. ctx may end the wait earlier; its deadline is never the lock's lease.`,
			"Unlock": `
Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
Unlock. It returns an error matching redisync.ErrNotHeld, and changes nothing, when ctx carries no
hold of the lock, and redisync.ErrNotInnermost when holds taken inside it are still open. It
releases even when ctx has been cancelled.`,
			"ForceUnlock": `
ForceUnlock frees the lock whoever holds it, and reports whether it was held. Holders on this
Client see their ctx end with redisync.ErrLost at once; holders elsewhere at their next renewal.`,
			"HoldCount": `
HoldCount returns how many times ctx's owner holds the lock (0 when it does not), even when ctx
has ended.`,
			"TTL": `
TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
when it is held without expiry.`,
		}},

	{pkg: "fairlock", file: "lock_gen.go", typ: "Lock", recv: "l", option: "Option", opts: "options",
		docs: map[string]string{
			"WithFencing": `
WithFencing makes every acquisition, re-entry included, take a fencing token from a counter in
Redis (Redisson's RFencedLock counter, shared with a package rlock lock of the same name): a number
that grows with each acquisition, which a store can use to reject writes from a holder that has
been overtaken. Read it with Token. The counter is a key without expiry, one per lock name.`,
			"Lock": `
Lock waits in line until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx
that carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work
done under the lock so that the work stops if the lock is lost.

When ctx ends first, the waiter leaves the queue before Lock returns (on its own afterwards when
Redis does not answer that within a quarter second); a try of it that reaches Redis
after that, held up by a stalled server or network, takes no place. When the Client is closed,
nothing more is sent: the place is passed over as a dead process's is (see WithSlot).`,
			"TryLock": `
TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired, and leaves the queue,
when the lock is not acquired within wait. With wait 0 it tries once and never joins the queue: it
acquires only if the lock is free and nobody waits for it. ctx may end the wait earlier; its
deadline is never the lock's lease.`,
			"Unlock": `
Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
Unlock, and then the waiter at the head of the queue is woken. It returns an error matching
redisync.ErrNotHeld, and changes nothing, when ctx carries no hold of the lock (never did, released
it, or its lease ended), and redisync.ErrNotInnermost when holds taken inside it are still open.
It releases even when ctx has been cancelled.`,
			"ForceUnlock": `
ForceUnlock frees the lock whoever holds it, and wakes the waiter at the head of the queue. It
reports whether the lock was held. Holders on this Client see their ctx end with redisync.ErrLost
at once; holders elsewhere at their next renewal. The queue is kept.`,
		}},

	{pkg: "rwlock", file: "lock_gen.go", typ: "Lock", recv: "l", option: "Option", opts: "options",
		omit: []string{"Token", "IsLocked", "WithFencing"},
		docs: map[string]string{
			"WithLease": `
WithLease gives every acquisition, read or write, a fixed lease: each hold frees itself after d
unless unlocked before, with no renewal, and the ctx Lock returns has the lease's end (less 1% +
2 ms for clock drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the holds
while they are held and lets them expire within the watchdog timeout when the process dies.`,
			"NonReentrant": `
NonReentrant makes re-entry an error: an owner that takes the read lock (or the write lock) again
gets redisync.ErrAlreadyHeld, and its holds are unchanged. Taking the read lock while writing
(downgrade) is not re-entry and stays allowed.`,
			"Lock": `
Lock waits until it acquires this side of the lock, ctx ends, or the Client is closed. It returns a
ctx that carries the owner and ends when the hold ends; pass it to Unlock, and to the work done under
the lock so that the work stops if the lock is lost.

A read lock taken with the ctx the write lock returned (downgrade) outlives the write hold: as
for every hold taken through another, its ctx ends with the read hold, or with the ctx the write
lock was taken with, and not when the write lock is released.`,
			"Extend": `
Extend makes the hold of ctx's owner last at least lease from now (Redisson's expire on a held
lock), and moves the deadline of ctx's hold, when its lease is fixed, to the new end. It never
shortens a hold. It returns an error matching redisync.ErrNotHeld, and changes nothing, when the
owner does not hold this side or ctx's hold has ended, and it acts once whatever the network
loses. On a hold the watchdog keeps, the TTL lasts at least lease and the renewals go on.`,
			"IsHeldBy": `
IsHeldBy reports whether owner, an owner id of this Client (redisync.OwnerID of a hold's ctx),
holds this side (Redisson's isHeldByThread, an owner id standing for the thread id).`,
			"Unlock": `
Unlock releases the hold on this side that ctx carries: the side is free of that owner when every
Lock has been matched by an Unlock. It returns an error matching redisync.ErrNotHeld, and changes
nothing, when ctx carries no hold of this side (never did, released it, or its lease ended), and,
for the write lock, redisync.ErrNotInnermost when write holds taken inside it are still open (read
holds may be released in any order). It releases even when ctx has been cancelled.

The last read hold to go frees the lock and wakes one waiter; the last write hold wakes every
waiter, also when the owner keeps reading (downgrade), so that other readers join it at once.`,
			"ForceUnlock": `
ForceUnlock frees the lock whoever holds it, if it is held in this side's mode (a read lock's
ForceUnlock leaves a writer alone, and the other way round), and wakes every waiter. It reports
whether it freed the lock. Holders on this Client see their ctx end with redisync.ErrLost at once
(in write mode the writer's own read holds too: they went with the hash); holders elsewhere at
their next renewal.`,
			"IsHeld": `
IsHeld reports whether ctx's owner holds this side (Redisson's isHeldByCurrentThread).`,
			"HoldCount": `
HoldCount returns how many times ctx's owner holds this side (0 when it does not). Like Unlock, it
answers even when ctx has ended, since ctx here names the owner.`,
			"TTL": `
TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
when it is held without expiry (only a foreign writer can do that). Both sides share it.`,
			"Do": `
Do runs fn while holding this side: it locks (waiting as Lock does), runs fn with the hold's ctx,
and unlocks. fn's ctx ends if the hold is lost; Do then returns fn's error joined with the cause.
When fn panics, the hold is released (and fn's ctx ends with redisync.ErrReleased) before the
panic goes on to the caller.`,
		}},

	{pkg: "multilock", file: "group_gen.go", typ: "Group", recv: "g", option: "GroupOption", opts: "groupOptions",
		omit: []string{"IsHeldBy", "Token", "IsLocked", "IsHeld", "HoldCount", "TTL", "WithFencing"},
		docs: map[string]string{
			"WithLease": `
WithLease gives every acquisition of a Group a fixed lease, as rlock.WithLease does: its values are
freed after d unless unlocked before, with no renewal. Without it the watchdog keeps them.`,
			"NonReentrant": `
NonReentrant makes re-entry an error: an owner that locks a Group again while it holds any of its
values gets redisync.ErrAlreadyHeld, and nothing changes.`,
			"Name": `
Name returns the group's name as the Client's name mapper maps it: the hash's key in Redis.`,
			"Lock": `
Lock waits until it holds every value, ctx ends, or the Client is closed, and returns a ctx that
carries the owner and ends when the hold does; pass it to Unlock. While any value is held by
another owner it holds none, and it tries again when a release in the group is announced or when
the longest of the holds in its way may have ended.`,
			"TryLock": `
TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired, holding nothing, when
it has not held every value within wait; with wait 0 it tries once.`,
			"LockFor": `
LockFor is Lock with a lease of its own for this acquisition (Redisson's lock(leaseTime, unit)):
lease > 0 is a fixed lease, as WithLease gives, and 0 the Client's watchdog, whatever the Group's
options. A re-entry never shortens what an outer hold was promised.`,
			"Extend": `
Extend makes the hold of ctx's owner on every value last at least lease from now, and moves the
deadline of ctx's hold, when its lease is fixed, to the new end. It never shortens a hold. It
returns an error matching redisync.ErrNotHeld, and changes nothing, when the owner does not hold
every value or ctx's hold has ended, and it acts once whatever the network loses.`,
			"Unlock": `
Unlock releases the hold that ctx carries on every value: the values are free when every Lock has
been matched by an Unlock. It returns an error matching redisync.ErrNotHeld when ctx carries no hold
of the Group, or when some value was no longer held (what was still held is released all the same),
and redisync.ErrNotInnermost when holds taken inside it are still open. It releases even when ctx
has been cancelled.`,
			"ForceUnlock": `
ForceUnlock frees every value of the Group whoever holds it, wakes the group's waiters, and reports
whether any value was held. Holds of these values on this Client end with redisync.ErrLost at once;
elsewhere at their next renewal.`,
			"Do": `
Do runs fn while holding every value: it locks (waiting as Lock does), runs fn with the hold's ctx,
and unlocks. fn's ctx ends if the hold is lost; Do then returns fn's error joined with the cause.
When fn panics, every value is released (and fn's ctx ends with redisync.ErrReleased) before the
panic goes on to the caller.`,
		}},
}
