package rwlock

import (
	"context"
	"math"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/hashlock"
	"github.com/redisync/redisync/lua"
)

var (
	readAcquireScript  = lua.Load("rwlock_read_acquire.lua")
	writeAcquireScript = lua.Load("rwlock_write_acquire.lua")
	readReleaseScript  = lua.LoadRetryable("rwlock_leases.lua", "rwlock_read_release.lua")
	writeReleaseScript = lua.LoadRetryable("rwlock_leases.lua", "rwlock_write_release.lua")
	readRenewScript    = lua.Load("rwlock_read_renew.lua")
	writeRenewScript   = lua.Load("rwlock_write_renew.lua")
	forceScript        = lua.Load("rwlock_force_release.lua")
	withdrawScript     = lua.LoadRetryable("rwlock_withdraw.lua")
)

// latchTTL is how long a release that leaves holds remembers its answer, so that a release re-sent
// after a network error does not release twice; the latch is deleted once the answer is in.
const latchTTL = "10000"

// Every script takes a prefix of these KEYS (rwlock_leases.lua).
const (
	keyLock = iota
	keyWriters
	keyOwnerLeases // the owner's read lease keys without the hold number
	keyChannel
	keyLeasePrefix // "{N}:": every read lease key is it + "OWNER:rwlock_timeout:k"
	keyLatch
	nKeys
)

// The acquire scripts' ARGV (rwlock_read_acquire.lua, rwlock_write_acquire.lua).
const (
	argLease = iota
	argField
	argOtherField // the owner's field on the other side
	argReentrant
	argPolicy // read: "1" to let announced writers go first; write: ms an announcement lasts ("0": none)
	nArgs
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
	h hashlock.Lock
	p *side
}

// side is what one side of the lock does in Redis (hashlock.Protocol).
type side struct {
	c       *core.Client
	writer  bool
	name    string
	channel string
	writers string
	prefix  string // keyLeasePrefix
	latch   string // the latch key without the request id
	leaseMs string
	reentry string
	policy  string // argPolicy
	mode    string // the hash's 'mode' while this side is held
}

// keys returns the scripts' KEYS for owner.
func (s *side) keys(owner int64) [nKeys]string {
	return [nKeys]string{s.name, s.writers, s.prefix + s.c.Owner(owner) + ":rwlock_timeout", s.channel, s.prefix, ""}
}

// Field returns the owner's hash field on this side: "<clientID>:<ownerID>" for reads, with ":write"
// appended for writes.
func (s *side) Field(owner int64) string {
	if s.writer {
		return s.c.Owner(owner) + ":write"
	}
	return s.c.Owner(owner)
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.h.Name }

// Lock waits until it acquires this side of the lock, ctx ends, or the Client is closed. It returns a
// ctx that carries the owner and ends when the hold ends; pass it to Unlock, and to the work done under
// the lock so that the work stops if the lock is lost.
//
// A read lock taken with the very ctx the write lock returned (downgrade) outlives the write hold:
// its ctx ends with the read hold or with the ctx the write lock was taken with, not when the write
// lock is released.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.h.Lock(ctx) }

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
// acquired within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier;
// its deadline is never the lock's lease.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	return l.h.TryLock(ctx, wait)
}

func (s *side) Begin(ctx context.Context, owner int64, field string, wait time.Duration) (context.Context, hashlock.Acquisition) {
	a := &attempt{s: s, ctx: ctx, owner: owner, keys: s.keys(owner), link: func(context.Context) {}}
	a.args = [nArgs]string{argLease: s.leaseMs, argField: field, argReentrant: s.reentry, argPolicy: s.policy}
	if s.writer {
		a.args[argOtherField] = s.c.Owner(owner)
		if wait == 0 {
			a.args[argPolicy] = "0" // a single try does not wait, so it keeps nobody out
		}
		return ctx, a
	}
	a.args[argOtherField] = field + ":write"
	parent, link := s.downgradeParent(ctx)
	a.link = link
	return parent, a
}

// attempt is one acquisition of a side.
type attempt struct {
	s     *side
	ctx   context.Context // the caller's
	owner int64
	keys  [nKeys]string
	args  [nArgs]string
	link  func(held context.Context)
}

func (a *attempt) Wait() core.Wait {
	return core.Wait{Channel: a.s.channel, Weight: 1, Policy: policy, Try: a.try, Undo: a.undo}
}

func (a *attempt) Renew() core.RenewSpec {
	if a.s.writer {
		return core.RenewSpec{Script: writeRenewScript, Keys: a.keys[:keyLock+1], Args: a.args[argField : argField+1]}
	}
	return core.RenewSpec{Script: readRenewScript, Keys: []string{a.keys[keyLock], a.keys[keyOwnerLeases]}, Args: a.args[argField : argField+1]}
}

func (a *attempt) Token() int64 { return 0 }

// End links a read hold to the ctx it derives from (see downgradeParent); a writer that gives up
// stops keeping readers out at once (should that fail too, the announcement lapses by itself); a
// write hold's ctx carries what a downgrade needs.
func (a *attempt) End(ctx, held context.Context, err error) context.Context {
	a.link(held)
	switch {
	case err != nil && a.s.writer && a.args[argPolicy] != "0":
		keys, field := a.keys[:keyChannel+1], a.args[argField]
		a.s.c.Leave(func() {
			a.s.c.Run(context.WithoutCancel(ctx), withdrawScript, keys, []string{field, a.s.c.Publish()})
		})
	case err == nil && a.s.writer:
		held = context.WithValue(held, writeHeld{a.s.c, a.s.name}, writeParent{parent: a.ctx, done: held.Done()})
	}
	return held
}

func (a *attempt) try(ctx context.Context) (bool, time.Duration, error) {
	script, keys := readAcquireScript, a.keys[:keyOwnerLeases+1]
	if a.s.writer {
		script, keys = writeAcquireScript, a.keys[:keyWriters+1]
	}
	reply, notReplicated := core.SplitReplication(a.s.c.RunAcquire(ctx, script, keys, a.args[:]))
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

func (a *attempt) undo(ctx context.Context) { a.s.Release(ctx, a.owner, a.args[argField], 0) }

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
func (s *side) downgradeParent(ctx context.Context) (context.Context, func(held context.Context)) {
	p, ok := ctx.Value(writeHeld{s.c, s.name}).(writeParent)
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
func (l *Lock) Unlock(ctx context.Context) error { return l.h.Unlock(ctx) }

func (s *side) Release(ctx context.Context, owner int64, field string, held int) (int64, error) {
	keys := s.keys(owner)
	keys[keyLatch] = s.c.RequestKey(s.latch)
	script, args := readReleaseScript, []string{field, s.c.Publish(), latchTTL, hashlock.Held(held), "0"}
	if s.writer {
		script, args = writeReleaseScript, []string{field, s.c.Publish(), latchTTL, s.leaseMs, hashlock.Held(held), "0"}
	}
	return hashlock.Release(ctx, s.c, script, keys[:], args, keys[keyLatch], held)
}

// ForceUnlock frees the lock whoever holds it, if it is held in this side's mode (a read lock's
// ForceUnlock leaves a writer alone, and the other way round), and wakes every waiter. It reports
// whether it freed the lock. Holders on this Client see their ctx end with redisync.ErrLost at once
// (in write mode the writer's own read holds too: they went with the hash); holders elsewhere at
// their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) { return l.h.ForceUnlock(ctx) }

func (s *side) ForceRelease(ctx context.Context) (bool, error) {
	keys := s.keys(0)
	n, err := s.c.Run(ctx, forceScript, keys[:keyLeasePrefix+1], []string{s.mode, s.c.Publish()}).AsInt64()
	return n == 1, err
}

// IsLocked reports whether anyone holds this side (Redisson's isLocked of each side): for the write
// lock, whether a writer holds it; for the read lock, whether the lock is in read mode or its writer
// also reads (downgrade under way).
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	c, name := l.p.c, l.h.Name
	mode, err := c.Query(ctx, c.RDB().B().Hget().Key(name).Field("mode").Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	if err != nil {
		return false, core.Errorf(l.h.Kind, name, err)
	}
	if !l.p.writer && mode == "write" {
		// The writer's field and the mode: anything beyond them is the writer's own read hold.
		n, err := c.Query(ctx, c.RDB().B().Hlen().Key(name).Build()).AsInt64()
		if err != nil {
			return false, core.Errorf(l.h.Kind, name, err)
		}
		return n > 2, nil
	}
	return mode == l.p.mode, nil
}

// IsHeld reports whether ctx's owner holds this side (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) { return l.h.IsHeld(ctx) }

// HoldCount returns how many times ctx's owner holds this side (0 when it does not). Like Unlock, it
// answers even when ctx has ended, since ctx here names the owner.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.h.HoldCount(ctx) }

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry (only a foreign writer can do that). Both sides share it.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return l.h.TTL(ctx) }

// Do runs fn while holding this side: it locks (waiting as Lock does), runs fn with the hold's ctx,
// and unlocks. fn's ctx ends if the hold is lost; Do then returns fn's error joined with the cause.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return l.h.Do(ctx, fn)
}
