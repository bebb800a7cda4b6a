package rwlock

import (
	"context"
	"math"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/lua"
)

// keys are the side keys both sides take (rwlock_leases.lua).
var keys = map[string]string{
	"writers": layout.RWLock.Writers,
	"leases":  layout.RWLock.Leases,
	"channel": layout.RWLock.Channel,
}

// state reads either side (core.Lock.State): {pttl, count, mode, fields}.
var state = lua.Load("rwlock_state.lua")

// readSpec and writeSpec are the two sides in Redis: their scripts, and how their waiters wait.
var (
	readSpec = &core.Spec{
		Kind: "read lock",
		Keys: keys,
		Scripts: core.Scripts{
			Acquire: lua.Load("rwlock_read_acquire.lua"),
			Release: lua.Load("rwlock_read_release.lua"),
			Renew:   lua.Load("rwlock_read_renew.lua"),
			Force:   lua.Load("rwlock_force_release.lua"),
			Extend:  lua.Load("rwlock_read_extend.lua"),
			State:   state,
		},
		Policy: policy,
		Shared: true, // readers share, and may release in any order
	}
	writeSpec = &core.Spec{
		Kind: "write lock",
		Keys: keys,
		Scripts: core.Scripts{
			Acquire: lua.Load("rwlock_write_acquire.lua"),
			Release: lua.Load("rwlock_write_release.lua"),
			Renew:   lua.Load("rwlock_write_renew.lua"),
			Force:   lua.Load("rwlock_force_release.lua"),
			Leave:   lua.Load("rwlock_withdraw.lua"), // a writer that gives up stops keeping readers out
			Extend:  lua.Load("rwlock_write_extend.lua"),
			State:   state,
		},
		Policy:  policy,
		Suffix:  layout.RWLock.WriterSuffix,
		Refused: ErrUpgrade,
	}
)

// policy reads the channel's messages as Redisson does: '0' (a read unlock freed the lock) wakes
// one waiter, '1' (a write unlock, or a downgrade) wakes them all, since readers may enter together.
func policy(message string) int64 {
	if message == "1" {
		return math.MaxInt64
	}
	return 1
}

// Lock is one side of an RWLock: its ReadLock or its WriteLock.
type Lock struct {
	l      core.Lock
	c      *core.Client
	writer bool
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.l.Name() }

// Lock waits until it acquires this side of the lock, ctx ends, or the Client is closed. It returns a
// ctx that carries the owner and ends when the hold ends; pass it to Unlock, and to the work done under
// the lock so that the work stops if the lock is lost.
//
// A read lock taken with the ctx the write lock returned (downgrade) outlives the write hold: as
// for every hold taken through another, its ctx ends with the read hold, or with the ctx the write
// lock was taken with, and not when the write lock is released.
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
// owner does not hold this side or ctx's hold has ended, and it acts once whatever the network
// loses. On a hold the watchdog keeps, the TTL lasts at least lease and the renewals go on.
func (l *Lock) Extend(ctx context.Context, lease time.Duration) error { return l.l.Extend(ctx, lease) }

// IsHeldBy reports whether owner, an owner id of this Client (redisync.OwnerID of a hold's ctx),
// holds this side (Redisson's isHeldByThread, an owner id standing for the thread id).
func (l *Lock) IsHeldBy(ctx context.Context, owner int64) (bool, error) {
	return l.l.IsHeldBy(ctx, owner)
}

// Unlock releases the hold on this side that ctx carries: the side is free of that owner when every
// Lock has been matched by an Unlock. It returns an error matching redisync.ErrNotHeld, and changes
// nothing, when ctx carries no hold of this side (never did, released it, or its lease ended), and,
// for the write lock, redisync.ErrNotInnermost when write holds taken inside it are still open (read
// holds may be released in any order). It releases even when ctx has been cancelled.
//
// The last read hold to go frees the lock and wakes one waiter; the last write hold wakes every
// waiter, also when the owner keeps reading (downgrade), so that other readers join it at once.
func (l *Lock) Unlock(ctx context.Context) error { return l.l.Unlock(ctx) }

// ForceUnlock frees the lock whoever holds it, if it is held in this side's mode (a read lock's
// ForceUnlock leaves a writer alone, and the other way round), and wakes every waiter. It reports
// whether it freed the lock. Holders on this Client see their ctx end with redisync.ErrLost at once
// (in write mode the writer's own read holds too: they went with the hash); holders elsewhere at
// their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) { return l.l.ForceUnlock(ctx) }

// IsLocked reports whether anyone holds this side (Redisson's isLocked of each side): for the write
// lock, whether a writer holds it; for the read lock, whether the lock is in read mode or its writer
// also reads (downgrade under way).
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	st, err := l.l.State(ctx)
	if err != nil {
		return false, err
	}
	switch mode, fields := st[2], st[3]; {
	case l.writer:
		return mode == 2, nil
	case mode == 2:
		return fields > 2, nil // the writer's field and the mode: anything beyond is its own read hold
	default:
		return mode == 1, nil
	}
}

// IsHeld reports whether ctx's owner holds this side (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) { return l.l.IsHeld(ctx) }

// HoldCount returns how many times ctx's owner holds this side (0 when it does not). Like Unlock, it
// answers even when ctx has ended, since ctx here names the owner.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.l.HoldCount(ctx) }

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry (only a foreign writer can do that). Both sides share it.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return l.l.TTL(ctx) }

// Do runs fn while holding this side: it locks (waiting as Lock does), runs fn with the hold's ctx,
// and unlocks. fn's ctx ends if the hold is lost; Do then returns fn's error joined with the cause.
// When fn panics, the hold is released (and fn's ctx ends with redisync.ErrReleased) before the
// panic goes on to the caller.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}
