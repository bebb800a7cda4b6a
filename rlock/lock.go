// Package rlock is a distributed reentrant lock, Redisson's RLock: the same keys, hash fields and
// messages in Redis, so Go and Java processes exclude each other on the same name.
//
// The owner travels in the context (see package redisync): Lock returns a ctx that carries it, and
// that ctx, or any ctx derived from it, may Lock again (the hold count goes up); each hold is
// released with Unlock of its own ctx, innermost first. Goroutines that share a held ctx take turns.
// That ctx ends when the lock stops being held: with redisync.ErrReleased after the last Unlock, with
// redisync.ErrLost when the lease ends or the watchdog finds the lock gone.
//
// A waiter records itself beside the lock; a release hands the lock to the waiter that tried least
// recently, with that waiter's lease and fencing token, and tells its Client, so that the waiter
// returns without a command of its own. Java waiters, which leave no record, are still woken by
// Redisson's unlock message.
//
// Every call takes effect once, whatever the network loses: a call whose answer is lost is sent
// again, and the scripts tell by the hold count the Client expects whether the first send acted.
package rlock

import (
	"context"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/reentrant"
)

// spec is the reentrant lock in Redis: its keys, its scripts, and how its waiters wait.
var spec = reentrant.Spec("lock")

// Lock is a distributed reentrant lock on one name. It is cheap to create and safe for concurrent use;
// two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	l core.Lock
	o options
}

// Option configures a Lock.
type Option func(*options)

type options struct{ core.LockOptions }

// WithLease gives every acquisition a fixed lease: the lock frees itself after d unless unlocked
// before, with no renewal, and the ctx Lock returns has the lease's end (less 1% + 2 ms for clock
// drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the lock while it is
// held and lets it expire within the watchdog timeout when the process dies.
func WithLease(d time.Duration) Option { return func(o *options) { o.Lease = d } }

// NonReentrant makes re-entry an error: an owner that locks again gets redisync.ErrAlreadyHeld, and
// its hold is unchanged.
func NonReentrant() Option { return func(o *options) { o.NonReentrant = true } }

// WithFencing makes every acquisition, re-entry included, take a fencing token from a counter in
// Redis (Redisson's RFencedLock layout): a number that grows with each acquisition, which a store can
// use to reject writes from a holder that has been overtaken. Read it with Token. The counter is a
// key without expiry, one per lock name.
func WithFencing() Option { return func(o *options) { o.Fenced = true } }

// New returns the lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	l := new(Lock) // the options too: one allocation
	for _, opt := range opts {
		opt(&l.o)
	}
	if err := l.l.Init(core.Of(c), spec, name, l.o.LockOptions); err != nil {
		return nil, err
	}
	return l, nil
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.l.Name() }

// Lock waits until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx that
// carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work done
// under the lock so that the work stops if the lock is lost.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.l.Lock(ctx) }

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
// acquired within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier;
// its deadline is never the lock's lease.
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
// hold of the lock (never did, released it, or its lease ended), and redisync.ErrNotInnermost when
// holds taken inside it are still open. It releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error { return l.l.Unlock(ctx) }

// ForceUnlock frees the lock whoever holds it, and wakes a waiter. It reports whether the lock was
// held. Holders on this Client see their ctx end with redisync.ErrLost at once; holders elsewhere at
// their next renewal.
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

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
// When fn panics, the lock is released (and fn's ctx ends with redisync.ErrReleased) before the
// panic goes on to the caller.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}
