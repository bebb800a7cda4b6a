// Package spinlock is a distributed reentrant lock whose waiters poll instead of listening:
// Redisson's RSpinLock. It is the same lock in Redis as package rlock and as Redisson's RLock and
// RSpinLock on the same name (the same hash and fields, and rlock's scripts), so all of them exclude
// each other.
//
// A waiter subscribes to nothing and leaves no record: after a try that fails, it sleeps as its
// Backoff says (by default Redisson's ExponentialBackOff: 1 ms doubling up to 128 ms) and tries
// again. Pick it over rlock for very many short-lived locks, whose waits are shorter than a
// subscription costs, or where subscription connections are scarce (a large cluster, where each
// node a waiter listens on takes a connection). Pick rlock where waits are long or contended by
// many: its waiters cost nothing while they wait, and a release hands the lock over at once, where
// a spinning waiter learns of it at its next try and sends a command every sleep.
//
// Otherwise it is rlock: the owner travels in the context, re-entry, fan-out turns, the watchdog,
// fencing, and every call taking effect once whatever the network loses. A release still wakes, or
// hands the lock over to, rlock and Redisson waiters on the same name.
package spinlock

import (
	"context"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/reentrant"
)

// spec is rlock's: the same keys and scripts, so that it is the same lock in Redis.
var spec = reentrant.Spec("spin lock")

// Lock is a distributed reentrant spin lock on one name. It is cheap to create and safe for
// concurrent use; two Lock values with the same name on the same Client are the same lock, and so
// is an rlock.Lock of that name.
type Lock struct{ l core.Lock }

// Option configures a Lock.
type Option func(*options)

type options struct {
	core.LockOptions
	backoff Backoff
}

// WithLease gives every acquisition a fixed lease: the lock frees itself after d unless unlocked
// before, with no renewal, and the ctx Lock returns has the lease's end (less 1% + 2 ms for clock
// drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the lock while it is
// held.
func WithLease(d time.Duration) Option { return func(o *options) { o.Lease = d } }

// NonReentrant makes re-entry an error: an owner that locks again gets redisync.ErrAlreadyHeld, and
// its hold is unchanged.
func NonReentrant() Option { return func(o *options) { o.NonReentrant = true } }

// WithFencing makes every acquisition, re-entry included, take a fencing token from the lock's
// counter in Redis, the one rlock.WithFencing uses (Redisson's RFencedLock layout). Read it with
// Token.
func WithFencing() Option { return func(o *options) { o.Fenced = true } }

// WithBackoff sets how a waiter sleeps between tries (Redisson's getSpinLock(name, backOff)):
// ExponentialBackoff, ConstantBackoff, or a policy of one's own. Without it, ExponentialBackoff{}
// (Redisson's LockOptions.defaults()). New refuses nil and bad values with
// redisync.ErrInvalidArgument.
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// New returns the spin lock called name (Redisson's getSpinLock).
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	o := options{backoff: ExponentialBackoff{}}
	for _, opt := range opts {
		opt(&o)
	}
	var err error
	if o.Backoff, err = policy(o.backoff); err != nil {
		return nil, errs.Invalid(spec.Kind, name, "%v", err)
	}
	l := new(Lock)
	if err := l.l.Init(core.Of(c), spec, name, o.LockOptions); err != nil {
		return nil, err
	}
	return l, nil
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.l.Name() }

// Lock tries until it acquires the lock, ctx ends, or the Client is closed, sleeping between tries
// as the lock's Backoff says. It returns a ctx that carries the owner and ends when the lock stops
// being held; pass it to Unlock, and to the work done under the lock.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.l.Lock(ctx) }

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
// acquired within wait, its last sleep cut short to try once more at the bound; with wait 0 it
// tries once. ctx may end the wait earlier; its deadline is never the lock's lease.
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
// Unlock. It returns an error matching redisync.ErrNotHeld, and changes nothing, when ctx carries no
// hold of the lock, and redisync.ErrNotInnermost when holds taken inside it are still open. It
// releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error { return l.l.Unlock(ctx) }

// ForceUnlock frees the lock whoever holds it, and reports whether it was held. Holders on this
// Client see their ctx end with redisync.ErrLost at once; holders elsewhere at their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) { return l.l.ForceUnlock(ctx) }

// IsLocked reports whether any owner holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.l.IsLocked(ctx) }

// IsHeld reports whether ctx's owner holds the lock (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) { return l.l.IsHeld(ctx) }

// HoldCount returns how many times ctx's owner holds the lock (0 when it does not), even when ctx
// has ended.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.l.HoldCount(ctx) }

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return l.l.TTL(ctx) }

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
// When fn panics, the lock is released (and fn's ctx ends with redisync.ErrReleased) before the
// panic goes on to the caller.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.l.Lock, l.l.Unlock, fn)
}
