// Package fairlock is a distributed reentrant lock that grants in arrival order, Redisson's fair
// lock (RFairLock): the same keys, hash fields, queue, deadlines and messages in Redis, so Go and Java
// processes line up in one queue on the same name.
//
// The owner travels in the context as for package rlock: Lock returns a ctx that carries it, that ctx
// (or one derived from it) may Lock again, each hold is released with Unlock of its own ctx, innermost
// first, and a hold's ctx ends with redisync.ErrReleased at its Unlock or redisync.ErrLost when the
// lock is lost.
//
// A waiter takes a place at the end of the queue and waits on its own channel; an unlock wakes only
// the waiter at the head, so a handoff costs one message whatever the length of the line, and waiters
// further back are not woken by it. A waiter of this package also leaves a record beside the queue,
// and the unlock then hands it the lock, with its lease and fencing token, so that it returns without
// a try of its own; a waiter without a record (a Java one) is woken with Redisson's message and tries.
//
// Each place has a deadline in Redis: a waiter comes back at least every third of a slot (see
// WithSlot) to push its deadline on, and a waiter that does not come back (its process died) is passed
// over once nobody listens for its turn any more, or once its deadline is past. A waiter that gives up (its ctx ends, its wait bound passes) leaves
// the queue at once and gives its slot back to those behind it, and gives back the lock if an unlock
// handed it over meanwhile.
package fairlock

import (
	"context"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/reentrant"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// spec is the fair lock in Redis: rlock's hash, renewed, extended and read by rlock's scripts, with
// a queue of waiters beside it that its own scripts acquire, release and leave by.
var spec = func() *core.Spec {
	s := reentrant.Spec("fair lock")
	s.Keys = map[string]string{
		"queue":     layout.FairLock.Queue,
		"deadlines": layout.FairLock.Deadlines,
		"counter":   layout.FairLock.Counter,
		"channel":   layout.FairLock.Channels, // a prefix: each waiter waits on its own channel
		"records":   layout.FairLock.Records,
	}
	s.Scripts = core.Scripts{
		Acquire: lua.Load("fairlock_acquire.lua"),
		Release: lua.Load("fairlock_release.lua"),
		Renew:   s.Scripts.Renew,
		Force:   lua.Load("fairlock_force_release.lua"),
		Leave:   lua.Load("fairlock_leave.lua"),
		Extend:  s.Scripts.Extend,
		State:   s.Scripts.State,
	}
	// The channel is this owner's alone, and one acquisition of the owner waits at a time.
	s.Policy = pubsub.WakeAll
	return s
}()

// waiting counts the waiters (Waiting).
var waiting = lua.Load("fairlock_waiting.lua")

// Lock is a distributed fair reentrant lock on one name. It is cheap to create and safe for concurrent
// use; two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	l core.Lock
	c *core.Client
}

// Option configures a Lock.
type Option func(*options)

type options struct {
	core.LockOptions
	slot time.Duration
}

// WithLease gives every acquisition a fixed lease: the lock frees itself after d unless unlocked
// before, with no renewal, and the ctx Lock returns has the lease's end (less 1% + 2 ms for clock
// drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the lock while it is
// held and lets it expire within the watchdog timeout when the process dies.
func WithLease(d time.Duration) Option { return func(o *options) { o.Lease = d } }

// DefaultSlot is the wait slot of a Lock without WithSlot: Redisson's default fairLockWaitTimeout
// (its threadWaitTime), so that Go and Java waiters in one queue keep each other's places.
const DefaultSlot = 5 * time.Minute

// WithSlot sets the wait slot, Redisson's threadWaitTime (DefaultSlot unless set): how long a waiter
// may stay away from Redis before it loses its place. A waiter's deadline starts as Redisson's (the
// last waiter's deadline, or the end of the holder's lease, plus one slot), every try pushes it on to
// at least one slot per place in line from now, and a waiter of this package tries at least every
// third of a slot, so it keeps its place however long the lock is held. One whose process died is
// passed over as soon as a Go process sees that its Client no longer listens for its turn (its last
// try being more than 2 s old), and otherwise once it is at the head a slot after its last try.
//
// A Java waiter, which never pushes its deadline on, has it lowered by every acquisition ahead of it
// as Redisson lowers it: by the acquisition's slot (a Java tryLock(waitTime) by waitTime). So a Java
// acquisition lowers a Go waiter's deadline too: with Java processes in the line, keep the slot at least as long as Redisson's
// fairLockWaitTimeout and as the wait times of their tryLock calls, or a Java acquisition may cost a
// Go waiter its place in line (never the lock's exclusion).
func WithSlot(d time.Duration) Option { return func(o *options) { o.slot = d } }

// NonReentrant makes re-entry an error: an owner that locks again gets redisync.ErrAlreadyHeld, and
// its hold is unchanged.
func NonReentrant() Option { return func(o *options) { o.NonReentrant = true } }

// WithFencing makes every acquisition, re-entry included, take a fencing token from a counter in
// Redis (Redisson's RFencedLock counter, shared with a package rlock lock of the same name): a number
// that grows with each acquisition, which a store can use to reject writes from a holder that has
// been overtaken. Read it with Token. The counter is a key without expiry, one per lock name.
func WithFencing() Option { return func(o *options) { o.Fenced = true } }

// New returns the fair lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.slot < 0 || (o.slot > 0 && o.slot < 30*time.Millisecond) {
		return nil, errs.Invalid(spec.Kind, name, "slot %v: want 0 (default) or at least 30ms", o.slot)
	}
	if o.slot == 0 {
		o.slot = DefaultSlot
	}
	o.Values = map[string]string{"slot": strconv.FormatInt(o.slot.Milliseconds(), 10)}
	l := &Lock{c: core.Of(c)}
	if err := l.l.Init(l.c, spec, name, o.LockOptions); err != nil {
		return nil, err
	}
	return l, nil
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.l.Name() }

// Lock waits in line until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx
// that carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work
// done under the lock so that the work stops if the lock is lost.
//
// When ctx ends first, the waiter leaves the queue before Lock returns (on its own afterwards when
// Redis does not answer that within a quarter second); a try of it that reaches Redis
// after that, held up by a stalled server or network, takes no place. When the Client is closed,
// nothing more is sent: the place is passed over as a dead process's is (see WithSlot).
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.l.Lock(ctx) }

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired, and leaves the queue,
// when the lock is not acquired within wait. With wait 0 it tries once and never joins the queue: it
// acquires only if the lock is free and nobody waits for it. ctx may end the wait earlier; its
// deadline is never the lock's lease.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	return l.l.TryLock(ctx, wait)
}

// LockFor is Lock with a lease of its own for this acquisition (Redisson's lock(leaseTime, unit)):
// lease > 0 is a fixed lease, as WithLease gives, and 0 the Client's watchdog, whatever the lock's
// options. A re-entry never shortens what an outer hold was promised: the lock's TTL only grows.
func (l *Lock) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	return l.l.LockFor(ctx, lease)
}

// TryLockFor is TryLock with a lease of its own for this acquisition (Redisson's tryLock(waitTime,
// leaseTime, unit)): see LockFor.
func (l *Lock) TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return l.l.TryLockFor(ctx, wait, lease)
}

// Extend makes the hold of ctx's owner last at least lease from now (Redisson's expire on a held
// lock), and moves the deadline of ctx's hold, when its lease is fixed, to the new end. It never
// shortens a hold. It returns an error matching redisync.ErrNotHeld, and changes nothing, when the
// owner does not hold the lock or ctx's hold has ended, and it acts once whatever the network
// loses. On a hold the watchdog keeps, the TTL lasts at least lease and the renewals go on.
func (l *Lock) Extend(ctx context.Context, lease time.Duration) error { return l.l.Extend(ctx, lease) }

// IsHeldBy reports whether owner, an owner id of this Client (redisync.OwnerID of a hold's ctx),
// holds the lock (Redisson's isHeldByThread, an owner id standing for the thread id).
func (l *Lock) IsHeldBy(ctx context.Context, owner int64) (bool, error) {
	return l.l.IsHeldBy(ctx, owner)
}

// Token returns the fencing token of the acquisition that ctx came from (see WithFencing).
func (l *Lock) Token(ctx context.Context) (int64, bool) { return l.l.Token(ctx) }

// Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
// Unlock, and then the waiter at the head of the queue is woken. It returns an error matching
// redisync.ErrNotHeld, and changes nothing, when ctx carries no hold of the lock (never did, released
// it, or its lease ended), and redisync.ErrNotInnermost when holds taken inside it are still open.
// It releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error { return l.l.Unlock(ctx) }

// ForceUnlock frees the lock whoever holds it, and wakes the waiter at the head of the queue. It
// reports whether the lock was held. Holders on this Client see their ctx end with redisync.ErrLost
// at once; holders elsewhere at their next renewal. The queue is kept.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) { return l.l.ForceUnlock(ctx) }

// IsLocked reports whether any owner holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.l.IsLocked(ctx) }

// IsHeld reports whether ctx's owner holds the lock (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) { return l.l.IsHeld(ctx) }

// HoldCount returns how many times ctx's owner holds the lock (0 when it does not). Like Unlock, it
// answers even when ctx has ended, since ctx here names the owner.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.l.HoldCount(ctx) }

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry (only a foreign writer can do that).
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return l.l.TTL(ctx) }

// Waiting returns how many owners are in the queue, from every client. It may count waiters that
// died and have not been passed over yet.
func (l *Lock) Waiting(ctx context.Context) (int, error) {
	if ctx == nil {
		return 0, errs.Invalid(spec.Kind, l.l.Name(), "nil context")
	}
	c, name := l.c, l.l.Name()
	n, err := c.QueryScript(ctx, waiting, []string{name, c.Names().Prefixed(layout.FairLock.Queue, name)}, nil).AsInt64()
	if err != nil {
		return 0, errs.Errorf(spec.Kind, l.l.Name(), err)
	}
	return int(n), nil
}

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
// When fn panics, the lock is released (and fn's ctx ends with redisync.ErrReleased) before the
// panic goes on to the caller.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}
