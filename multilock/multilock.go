// Package multilock combines exclusive locks, usually on different Redis servers, into one:
//
//   - MultiLock holds all of its locks or none (Redisson's RedissonMultiLock).
//   - RedLock holds a majority of its locks, one per independent server, for a bounded validity
//     time (the Redlock algorithm, Redisson's deprecated RedissonRedLock). Read what it does not
//     guarantee, below, before using it: it is not safe where correctness depends on the lock.
//
// Group locks many values of one group, all or none, in one hash and one command (Redisson's
// RedissonFasterMultiLock): "these 200 order ids" without 200 locks. It is a Locker itself.
//
// MultiLock and RedLock take any Locker, such as an rlock.Lock (one per server, each on its own redisync.Client), and
// keep no keys of their own in Redis. Ownership travels in the context as for every lock of this
// module: Lock returns a ctx that carries the owner of every sub-lock and ends when the composite stops
// being held (redisync.ErrReleased after Unlock, redisync.ErrLost when a sub-lock is lost, or the
// parent's cause). IsHeld asks the servers whether ctx's owner still holds the composite. A MultiLock
// or RedLock is itself a Locker, so composites nest.
//
// # What RedLock does not guarantee
//
// Redlock's safety rests on timing assumptions that real systems break: a process paused (GC, swap,
// a stopped VM) or a network delay longer than the validity time lets two owners believe they hold
// the lock, and a server that restarts without having persisted the lock, or whose clock jumps, can
// grant it a second time (Martin Kleppmann, "How to do distributed locking", 2016). Nothing in
// Redlock lets a resource reject the late owner. Redisson has deprecated its RedLock for these
// reasons. Use RedLock only where an occasional second owner costs efficiency, not correctness. Where
// correctness matters, use one lock (rlock) on a replicated deployment whose writes are acknowledged
// by the replicas, and fencing tokens (rlock.WithFencing) checked by the resource, so that a stale
// owner's writes are refused.
//
// # A Group's layout in Redis (Redisson's)
//
// The group is a hash. Each value held has three fields: "<value>" holds its owner ("<client id>:<owner
// id>", where Redisson writes "<client id>:<thread id>"), "<value>:<owner>:expire_time" until when
// the owner holds it (ms since the epoch), and "<value>:<owner>:lock_count" how many times. <value> is
// the value's field name: GroupField of the bytes Redisson's codec writes for it. The hash's TTL is
// the longest lease given. Releases that free a value publish "0" on
// "redisson_lock__channel:{<group>}", which wakes every waiter of the group to try again.
//
// # The clocks a Group is kept by
//
// expire_time is read and written against the Redis server's clock (TIME, inside the scripts);
// Redisson's scripts are given the Java client's clock instead. Where Java and Go processes share a
// group, a Java host whose clock is ahead of the server's by d sees Go holds end d early (and its own
// last d longer for Go): exclusion holds while d stays below what is left of a Go hold's lease. A
// watchdog hold keeps at least two thirds of the watchdog timeout (20 s by default), far beyond what
// NTP lets clocks drift; a fixed lease's ctx ends only its Drift (1% + 2 ms) before the expiry.
package multilock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	holds "github.com/redisync/redisync/internal/hold"
)

// Locker is an exclusive lock that a MultiLock or RedLock combines: rlock.Lock, spinlock.Lock,
// fairlock.Lock, rwlock's WriteLock, Group, and MultiLock and RedLock themselves satisfy it.
//
// Lock and TryLock acquire for the owner that ctx carries (a fresh one if none) and return a ctx that
// carries that owner and ends when the hold ends; TryLock gives up with an error matching
// redisync.ErrNotAcquired when the lock is not acquired within wait, and with wait 0 tries once.
// LockFor and TryLockFor do the same with a lease of their own (0: the watchdog's). Unlock, given
// that ctx, releases that hold, and returns an error matching redisync.ErrNotHeld when it was not
// held. IsHeld reports whether the owner that ctx carries holds the lock, IsHeldBy whether the owner
// id given does, IsLocked whether anyone does; ForceUnlock frees it whoever holds it, and reports
// whether it was held.
type Locker interface {
	Name() string
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	LockFor(ctx context.Context, lease time.Duration) (context.Context, error)
	TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
	IsHeld(ctx context.Context) (bool, error)
	IsHeldBy(ctx context.Context, owner int64) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	ForceUnlock(ctx context.Context) (bool, error)
}

// MultiLock holds all of several locks, or none. It is safe for concurrent use.
//
// It takes the locks in the order of their names (locks with equal names, say the same name on
// different servers, in the order given), and never waits for one while holding another: when a lock
// is busy it gives back what it holds, waits for that lock alone, then tries the others again without
// waiting. So MultiLocks over the same locks, given in any order, cannot deadlock, and a sub-lock's
// fixed lease does not run down while the others are awaited.
//
// Leases are those of the sub-locks (each is kept by its Client's watchdog, or has a fixed lease,
// rlock.WithLease), or the one LockFor and TryLockFor give every sub-lock. The ctx Lock returns has
// the earliest fixed lease's end as its deadline. When any sub-lock is lost, that ctx ends with
// redisync.ErrLost and the other sub-locks are given back at once; Unlock then reports
// redisync.ErrNotHeld.
type MultiLock struct{ set }

const multiKind = "multilock"

// New returns a MultiLock over locks. It needs at least one lock.
func New(locks ...Locker) (*MultiLock, error) {
	s, err := newSet(multiKind, locks)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(s.locks, func(a, b Locker) int { return cmp.Compare(a.Name(), b.Name()) })
	return &MultiLock{s}, nil
}

// Name returns the names of the sub-locks, joined by commas, as given to New.
func (m *MultiLock) Name() string { return m.name }

// Lock waits until it holds every sub-lock, ctx ends, or a sub-lock fails with an error other than
// being busy (then everything acquired is given back). It returns a ctx that carries the owner and
// ends when the MultiLock stops being held; pass it to Unlock.
func (m *MultiLock) Lock(ctx context.Context) (context.Context, error) {
	return m.acquire(ctx, -1, ownLease)
}

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired, holding nothing, when
// it has not held every sub-lock at once within wait; with wait 0 it tries each once.
func (m *MultiLock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	if err := m.checkBounds(wait, 0); err != nil {
		return nil, err
	}
	return m.acquire(ctx, wait, ownLease)
}

// LockFor is Lock with one lease for every sub-lock (Redisson's lock(leaseTime, unit)): lease > 0 is
// fixed, and 0 the watchdog's, whatever the sub-locks' options. No sub-lock's lease runs down while
// another is awaited, since a MultiLock waits holding nothing.
func (m *MultiLock) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := m.checkBounds(0, lease); err != nil {
		return nil, err
	}
	return m.acquire(ctx, -1, lease)
}

// TryLockFor is TryLock with one lease for every sub-lock (Redisson's tryLock(waitTime, leaseTime,
// unit)): see LockFor.
func (m *MultiLock) TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if err := m.checkBounds(wait, lease); err != nil {
		return nil, err
	}
	return m.acquire(ctx, wait, lease)
}

// ownLease, as a composite's lease, takes each sub-lock with its own.
const ownLease = -1

// lockSub acquires l for a composite, waiting at most wait (< 0: without bound), with lease.
func lockSub(ctx context.Context, l Locker, wait, lease time.Duration) (context.Context, error) {
	switch {
	case lease == ownLease && wait < 0:
		return l.Lock(ctx)
	case lease == ownLease:
		return l.TryLock(ctx, wait)
	case wait < 0:
		return l.LockFor(ctx, lease)
	}
	return l.TryLockFor(ctx, wait, lease)
}

func (m *MultiLock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if ctx == nil {
		return nil, errs.Invalid(multiKind, m.name, "nil context")
	}
	if _, ok := holds.OwnerID(ctx); !ok {
		ctx = holds.WithNewOwner(ctx)
	}
	// The sub-locks' holds and the MultiLock's own follow ctx through one ctx, which ends before
	// them: a sub-lock whose ctx ends with the caller's is told from a lost one by it.
	ctx, unfollow := holds.Derive(ctx)
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	first := 0 // the lock to wait for, holding nothing
	for {
		left := time.Duration(-1)
		if wait >= 0 {
			left = max(time.Until(deadline), 0)
		}
		c, err := lockSub(reentering(ctx, m, m.locks[first]), m.locks[first], left, lease)
		if err != nil {
			unfollow()
			return nil, m.err(err)
		}
		held, busy, err := m.takeOthers(ctx, first, lease, []*sub{{l: m.locks[first], ctx: c}})
		if err != nil {
			unfollow()
			return nil, m.err(err)
		}
		if busy < 0 {
			end, first := earliest(ctx, held)
			var lost error
			if first != nil {
				lost = m.err(fmt.Errorf("%w: the lease of %s ended", errs.ErrLost, first.Name()))
			}
			return newHold(m, multiKind, m.name, ctx, unfollow, held, len(held), end, lost), nil
		}
		if err := giveBack(held, nil); err != nil {
			unfollow()
			return nil, m.err(err)
		}
		if wait == 0 || (wait > 0 && !time.Now().Before(deadline)) {
			unfollow()
			return nil, m.err(errs.ErrNotAcquired)
		}
		first = busy
	}
}

// takeOthers tries each lock but first once, without waiting, after held (first's): it returns what
// it holds, and the first lock busy (-1: none); an error (other than busy) gives back all it held.
func (m *MultiLock) takeOthers(ctx context.Context, first int, lease time.Duration, held []*sub) ([]*sub, int, error) {
	for i, l := range m.locks {
		if i == first {
			continue
		}
		c, err := lockSub(reentering(ctx, m, l), l, 0, lease)
		if errors.Is(err, errs.ErrNotAcquired) {
			return held, i, nil
		}
		if err != nil {
			return nil, -1, giveBack(held, err)
		}
		held = append(held, &sub{l: l, ctx: c})
	}
	return held, -1, nil
}

// earliest returns the earliest deadline among the sub-locks' contexts that comes before the
// parent's own, and its lock: the end of the first fixed lease. Zero when there is none.
func earliest(parent context.Context, subs []*sub) (time.Time, Locker) {
	var first time.Time
	var l Locker
	for _, s := range subs {
		d, ok := s.ctx.Deadline()
		if !ok {
			continue
		}
		if pd, ok := parent.Deadline(); ok && !d.Before(pd) {
			continue
		}
		if first.IsZero() || d.Before(first) {
			first, l = d, s.l
		}
	}
	return first, l
}

// Unlock releases every sub-lock of the acquisition that ctx came from. It releases even when ctx
// has been cancelled. It returns an error matching redisync.ErrNotHeld when ctx holds nothing of this
// MultiLock, or when the hold had been lost (the sub-locks still held are released all the same). A
// sub-lock whose release fails is named in the error and Unlock may be called again for it.
func (m *MultiLock) Unlock(ctx context.Context) error {
	return m.unlock(ctx, m)
}

// IsHeld reports whether the owner that ctx carries holds every sub-lock, asking each of them
// (Redisson's isHeldByCurrentThread), and, when ctx comes from a hold of this MultiLock, whether that
// hold has not ended (by Unlock, or by the loss or the lease end of a sub-lock). Like Unlock, it
// answers even when ctx has ended.
func (m *MultiLock) IsHeld(ctx context.Context) (bool, error) {
	return m.isHeld(ctx, m)
}

// IsHeldBy reports whether owner, an owner id (redisync.OwnerID of a hold's ctx), holds every
// sub-lock, asking each of them (Redisson's isHeldByThread).
func (m *MultiLock) IsHeldBy(ctx context.Context, owner int64) (bool, error) {
	return m.isHeldBy(ctx, owner)
}

// IsLocked reports whether any sub-lock is held by anyone, asking each of them: whether a Lock
// would have to wait now. (Redisson's MultiLock does not offer it.)
func (m *MultiLock) IsLocked(ctx context.Context) (bool, error) {
	return m.isLocked(ctx)
}

// ForceUnlock frees every sub-lock whoever holds it, and reports whether any was held. Holds of this
// MultiLock end with redisync.ErrLost: on this Client at once, elsewhere when their sub-locks find
// out. A sub-lock that could not be freed is named in the error; the others are freed all the same.
// (Redisson's MultiLock does not offer it.)
func (m *MultiLock) ForceUnlock(ctx context.Context) (bool, error) {
	return m.forceUnlock(ctx)
}

// Do runs fn while holding the MultiLock: it locks (waiting as Lock does), runs fn with the hold's
// ctx, and unlocks. fn's ctx ends if a sub-lock is lost; Do then returns fn's error joined with the
// cause. When fn panics, every sub-lock is released (and fn's ctx ends with redisync.ErrReleased)
// before the panic goes on to the caller.
func (m *MultiLock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, m.Lock, m.Unlock, fn)
}
