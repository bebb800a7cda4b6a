package rwlock

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/lua"
)

var (
	readAcquireScript  = lua.Load("rwlock_read_acquire.lua")
	writeAcquireScript = lua.Load("rwlock_write_acquire.lua")
	readReleaseScript  = lua.LoadRetryable("rwlock_read_release.lua")
	writeReleaseScript = lua.LoadRetryable("rwlock_write_release.lua")
	readRenewScript    = lua.Load("rwlock_read_renew.lua")
	writeRenewScript   = lua.Load("rwlock_write_renew.lua")
	forceScript        = lua.Load("rwlock_force_release.lua")
	withdrawScript     = lua.LoadRetryable("rwlock_withdraw.lua")
)

// latchTTL is how long a release remembers its answer, so that a release re-sent after a network
// error does not release twice.
const latchTTL = "10000"

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
	c           *core.Client
	name        string
	writer      bool
	lease       time.Duration
	reentrant   bool
	channel     string
	writersKey  string
	latchKey    string
	leasePrefix string // "{N}:": every read lease key is leasePrefix + "OWNER:rwlock_timeout:k"
	leaseMs     string
	reentryArg  string
	preferArg   string // read side: '1' to let announced writers go first
	intentMs    string // write side: how long an announcement lasts, '0' for none
}

func (l *Lock) kind() string {
	if l.writer {
		return "write lock"
	}
	return "read lock"
}

// mode is the value of the hash's 'mode' field while this side is held.
func (l *Lock) mode() string {
	if l.writer {
		return "write"
	}
	return "read"
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.name }

// field returns the owner's hash field on this side: "<clientID>:<ownerID>" for reads, with ":write"
// appended for writes.
func (l *Lock) field(owner int64) string {
	if l.writer {
		return l.c.Owner(owner) + ":write"
	}
	return l.c.Owner(owner)
}

// leaseKeys returns the owner's read lease keys without the hold number.
func (l *Lock) leaseKeys(owner int64) string {
	return l.leasePrefix + l.c.Owner(owner) + ":rwlock_timeout"
}

// Lock waits until it acquires this side of the lock, ctx ends, or the Client is closed. It returns a
// ctx that carries the owner and ends when the hold ends; pass it to Unlock, and to the work done under
// the lock so that the work stops if the lock is lost.
//
// A read lock taken with the very ctx the write lock returned (downgrade) outlives the write hold:
// its ctx ends with the read hold or with the ctx the write lock was taken with, not when the write
// lock is released.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) {
	return l.acquire(ctx, -1)
}

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
// acquired within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier;
// its deadline is never the lock's lease.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	if wait < 0 {
		return nil, core.Invalid(l.kind(), l.name, "negative wait %v", wait)
	}
	return l.acquire(ctx, wait)
}

func (l *Lock) acquire(ctx context.Context, wait time.Duration) (context.Context, error) {
	if ctx == nil {
		return nil, core.Invalid(l.kind(), l.name, "nil context")
	}
	ctx, owner := core.EnsureOwner(ctx)
	field := l.field(owner)
	var try core.Attempt
	var spec core.HoldSpec
	link := func(context.Context) {}
	if l.writer {
		try, spec = l.writeAttempt(owner, wait)
	} else {
		ctx, link = l.downgradeParent(ctx)
		try, spec = l.readAttempt(owner)
	}
	held, err := l.c.AcquireHold(ctx, spec, wait, core.Wait{
		Channel: l.channel,
		Weight:  1,
		Policy:  policy,
		Try:     try,
		Undo:    func(ctx context.Context) { l.release(ctx, owner) },
	})
	link(held)
	if err != nil {
		if l.writer && l.intentMs != "0" && wait != 0 {
			// A writer that gives up must stop keeping readers out at once. Should this fail too,
			// the announcement lapses by itself.
			keys := []string{l.writersKey, l.channel}
			l.c.Leave(func() { l.c.Run(context.WithoutCancel(ctx), withdrawScript, keys, []string{field, l.c.Publish()}) })
		}
		return nil, core.Errorf(l.kind(), l.name, err)
	}
	if l.writer {
		held = context.WithValue(held, writeHeld{l.c, l.name}, writeParent{parent: ctx, done: held.Done()})
	}
	return held, nil
}

func (l *Lock) readAttempt(owner int64) (core.Attempt, core.HoldSpec) {
	field := l.c.Owner(owner)
	leases := l.leaseKeys(owner)
	keys := []string{l.name, leases, l.writersKey}
	args := []string{l.leaseMs, field, field + ":write", l.reentryArg, l.preferArg}
	spec := core.HoldSpec{
		Kind: l.kind(), Name: l.name, Key: l.name, Field: field, Lease: l.lease, Shared: true,
		Renew: core.RenewSpec{Script: readRenewScript, Keys: []string{l.name, leases}, Args: []string{field}},
	}
	return l.attempt(readAcquireScript, keys, args), spec
}

func (l *Lock) writeAttempt(owner int64, wait time.Duration) (core.Attempt, core.HoldSpec) {
	field := l.field(owner)
	intent := l.intentMs
	if wait == 0 {
		intent = "0" // a single try does not wait, so it keeps nobody out
	}
	keys := []string{l.name, l.writersKey}
	args := []string{l.leaseMs, field, l.c.Owner(owner), l.reentryArg, intent}
	spec := core.HoldSpec{
		Kind: l.kind(), Name: l.name, Key: l.name, Field: field, Lease: l.lease,
		Renew: core.RenewSpec{Script: writeRenewScript, Keys: []string{l.name}, Args: []string{field}},
	}
	return l.attempt(writeAcquireScript, keys, args), spec
}

func (l *Lock) attempt(script *lua.Script, keys, args []string) core.Attempt {
	return func(ctx context.Context) (bool, time.Duration, error) {
		reply, notReplicated := core.SplitReplication(l.c.RunAcquire(ctx, script, keys, args))
		res, err := reply.AsIntSlice()
		if err != nil {
			return false, 0, err
		}
		switch res[0] {
		case 1:
			return true, 0, notReplicated // Acquire gives it back when it was not replicated
		case 2:
			return false, 0, core.ErrAlreadyHeld
		case 3:
			return false, 0, ErrUpgrade
		}
		return false, core.RetryIn(res[1]), nil
	}
}

// writeHeld keys, in a write hold's ctx, what the read side needs for a downgrade.
type writeHeld struct {
	c    *core.Client
	name string
}

type writeParent struct {
	parent context.Context // the ctx the write lock was taken with
	done   <-chan struct{} // the write hold ctx's Done
}

// downgradeParent returns the ctx a read hold should derive from. When ctx is the write hold's own
// ctx (or carries only values on top of it), deriving from it would end the read hold's ctx with the
// write release; the read hold derives instead from ctx's values and the cancellation of the ctx the
// write lock was taken with. A ctx with a cancellation of its own is used as it is. link must be
// called with the read hold's ctx (nil when the acquisition failed): it undoes the set-up once that
// ctx has ended.
func (l *Lock) downgradeParent(ctx context.Context) (context.Context, func(held context.Context)) {
	p, ok := ctx.Value(writeHeld{l.c, l.name}).(writeParent)
	if !ok || ctx.Done() != p.done {
		return ctx, func(context.Context) {}
	}
	base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(p.parent, func() { cancel(context.Cause(p.parent)) })
	undo := func() { stop(); cancel(context.Canceled) }
	return base, func(held context.Context) {
		if held == nil {
			undo()
			return
		}
		context.AfterFunc(held, undo)
	}
}

// Unlock releases the hold on this side that ctx carries: the side is free of that owner when every
// Lock has been matched by an Unlock. It returns an error matching redisync.ErrNotHeld, and changes
// nothing, when ctx carries no hold of this side (never did, released it, or its lease ended), and,
// for the write lock, redisync.ErrNotInnermost when write holds taken inside it are still open (read
// holds may be released in any order). It releases even when ctx has been cancelled.
//
// The last read hold to go frees the lock and wakes one waiter; the last write hold wakes every
// waiter, also when the owner keeps reading (downgrade), so that other readers join it at once.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.c.Unlock(ctx, l.kind(), l.name, l.name, l.field, func(ctx context.Context, owner int64, _ string) (int64, error) {
		return l.release(ctx, owner)
	})
}

func (l *Lock) release(ctx context.Context, owner int64) (int64, error) {
	latch := l.latchKey + l.c.RequestID()
	var res rueidis.RedisResult
	if l.writer {
		keys := []string{l.name, l.channel, l.leasePrefix, latch}
		res = l.c.Run(ctx, writeReleaseScript, keys, []string{l.field(owner), l.c.Publish(), latchTTL, l.leaseMs})
	} else {
		keys := []string{l.name, l.channel, l.leaseKeys(owner), l.leasePrefix, l.writersKey, latch}
		res = l.c.Run(ctx, readReleaseScript, keys, []string{l.field(owner), l.c.Publish(), latchTTL})
	}
	n, err := res.AsInt64()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, core.ErrNotHeld
	}
	return n, nil
}

// ForceUnlock frees the lock whoever holds it, if it is held in this side's mode (a read lock's
// ForceUnlock leaves a writer alone, and the other way round), and wakes every waiter. It reports
// whether it freed the lock. Holders on this Client see their ctx end with redisync.ErrLost at once;
// holders elsewhere at their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, core.Invalid(l.kind(), l.name, "nil context")
	}
	keys := []string{l.name, l.channel, l.leasePrefix}
	n, err := l.c.Run(ctx, forceScript, keys, []string{l.mode(), l.c.Publish()}).AsInt64()
	if err != nil {
		return false, core.Errorf(l.kind(), l.name, err)
	}
	if n == 0 {
		return false, nil
	}
	// Every hold on the name went with the hash: in write mode the writer's own read holds too.
	l.c.LoseHolds(l.name, fmt.Errorf("%w: forced unlock", core.ErrLost))
	return true, nil
}

// IsLocked reports whether anyone holds this side (Redisson's isLocked of each side): for the write
// lock, whether a writer holds it; for the read lock, whether the lock is in read mode or its writer
// also reads (downgrade under way).
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	mode, err := l.c.Query(ctx, l.c.RDB().B().Hget().Key(l.name).Field("mode").Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	if err != nil {
		return false, core.Errorf(l.kind(), l.name, err)
	}
	if !l.writer && mode == "write" {
		// The writer's field and the mode: anything beyond them is the writer's own read hold.
		n, err := l.c.Query(ctx, l.c.RDB().B().Hlen().Key(l.name).Build()).AsInt64()
		if err != nil {
			return false, core.Errorf(l.kind(), l.name, err)
		}
		return n > 2, nil
	}
	return mode == l.mode(), nil
}

// IsHeld reports whether ctx's owner holds this side (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many times ctx's owner holds this side (0 when it does not). Like Unlock, it
// answers even when ctx has ended, since ctx here names the owner.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	owner, ok := core.OwnerID(ctx)
	if !ok {
		return 0, nil
	}
	return l.c.HoldCount(ctx, l.kind(), l.name, l.name, l.field(owner))
}

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry (only a foreign writer can do that). Both sides share it.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	return l.c.TTL(ctx, l.kind(), l.name, l.name)
}

// Do runs fn while holding this side: it locks (waiting as Lock does), runs fn with the hold's ctx,
// and unlocks. fn's ctx ends if the hold is lost; Do then returns fn's error joined with the cause.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}
