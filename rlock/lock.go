// Package rlock is a distributed reentrant lock, Redisson's RLock: the same keys, hash fields and
// messages in Redis, so Go and Java processes exclude each other on the same name.
//
// The owner travels in the context (see package redisync): Lock returns a ctx that carries it, and
// that ctx, or any ctx derived from it, may Lock again (the hold count goes up); each hold is
// released with Unlock of its own ctx, innermost first. Goroutines that share a held ctx take turns. That ctx ends when the lock stops being held: with redisync.ErrReleased after the last
// Unlock, with redisync.ErrLost when the lease ends or the watchdog finds the lock gone.
//
// A waiter records itself beside the lock; a release hands the lock to the waiter that tried least
// recently, with that waiter's lease and fencing token, and tells its Client, so that the waiter
// returns without a command of its own. Java waiters, which leave no record, are still woken by
// Redisson's unlock message.
package rlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/pubsub"
	"github.com/redisync/redisync/lua"
)

var (
	acquireScript = lua.Load("extend.lua", "rlock_acquire.lua")
	releaseScript = lua.LoadRetryable("extend.lua", "wake_records.lua", "rlock_wake.lua", "rlock_release.lua")
	forgetScript  = lua.LoadRetryable("wake_records.lua", "rlock_wake.lua", "rlock_forget.lua")
	forceScript   = lua.Load("wake_records.lua", "rlock_wake.lua", "rlock_force_release.lua")
	renewScript   = lua.Load("extend.lua", "rlock_renew.lua")
)

// latchTTL is how long a release remembers its answer, so that a release re-sent after a network
// error does not release twice.
const latchTTL = "10000"

const kind = "lock"

// lingerMs: a client keeps listening on a lock's wake channel this long after its last waiter left.
var lingerMs = strconv.FormatInt(pubsub.Linger.Milliseconds(), 10)

// Lock is a distributed reentrant lock on one name. It is cheap to create and safe for concurrent use;
// two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	c          *core.Client
	name       string
	lease      time.Duration
	reentrant  bool
	fenced     bool
	keys       [4]string // the acquire script's KEYS: the lock, its fencing counter, waiters, clients
	channel    string
	wake       string // this client's wake channel
	wakePrefix string // wake without the client id
	latchKey   string // + ":" + a request id: one unlock latch
	leaseMs    string
	grantMs    string // the lease a release that hands the lock to a waiter gives it ("0": none)
	windowMs   string
	reentryArg string
	fenceArg   string
}

// Option configures a Lock.
type Option func(*Lock)

// WithLease gives every acquisition a fixed lease: the lock frees itself after d unless unlocked
// before, with no renewal, and the ctx Lock returns has the lease's end (less 1% + 2 ms for clock
// drift) as its deadline. Without it (or with 0) the Client's watchdog keeps the lock while it is
// held and lets it expire within the watchdog timeout when the process dies.
func WithLease(d time.Duration) Option { return func(l *Lock) { l.lease = d } }

// NonReentrant makes re-entry an error: an owner that locks again gets redisync.ErrAlreadyHeld, and
// its hold is unchanged.
func NonReentrant() Option { return func(l *Lock) { l.reentrant = false } }

// WithFencing makes every acquisition, re-entry included, take a fencing token from a counter in
// Redis (Redisson's RFencedLock layout): a number that grows with each acquisition, which a store can
// use to reject writes from a holder that has been overtaken. Read it with Token. The counter is a
// key without expiry, one per lock name.
func WithFencing() Option { return func(l *Lock) { l.fenced = true } }

// New returns the lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	if c == nil {
		return nil, core.Invalid(kind, name, "nil client")
	}
	if name == "" {
		return nil, core.Invalid(kind, name, "empty name")
	}
	l := &Lock{c: core.Of(c), name: name, reentrant: true}
	for _, o := range opts {
		o(l)
	}
	if l.lease < 0 {
		return nil, core.Invalid(kind, name, "negative lease %v", l.lease)
	}
	if l.lease > 0 && l.lease < time.Millisecond {
		return nil, core.Invalid(kind, name, "lease %v is below Redis's millisecond resolution", l.lease)
	}
	side := core.SideKeys(name, "redisson_lock_token", "redisync_lock_waiters", "redisync_lock_clients",
		"redisson_lock__channel", "redisson_unlock_latch", "redisync_lock__wake")
	l.keys = [4]string{name, side[0], side[1], side[2]}
	l.channel, l.latchKey = side[3], side[4]
	l.wake = side[5] + ":" + l.c.ID()
	l.wakePrefix = l.wake[:len(l.wake)-len(l.c.ID())]
	l.windowMs = "0" // no directed wake-up where subscriber counts cannot be trusted
	if l.c.NumSub() != "" {
		l.windowMs = l.c.WaitWindowMs()
	}
	l.leaseMs, l.grantMs = l.c.LeaseMs(l.lease), l.c.LeaseMs(l.lease)
	if l.c.Config().ReplicaAck != 0 {
		l.grantMs = "0" // an acquisition must wait for the replicas, which only a try of its own does
	}
	l.reentryArg, l.fenceArg = flag(l.reentrant), flag(l.fenced)
	return l, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.name }

// Lock waits until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx that
// carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work done
// under the lock so that the work stops if the lock is lost.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) {
	return l.acquire(ctx, -1)
}

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
// acquired within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier;
// its deadline is never the lock's lease.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	if wait < 0 {
		return nil, core.Invalid(kind, l.name, "negative wait %v", wait)
	}
	return l.acquire(ctx, wait)
}

func (l *Lock) acquire(ctx context.Context, wait time.Duration) (context.Context, error) {
	if ctx == nil {
		return nil, core.Invalid(kind, l.name, "nil context")
	}
	ctx, owner := core.EnsureOwner(ctx)
	a := &attempt{l: l}
	field := l.c.Owner(owner)
	window, wake := l.windowMs, l.wake
	if wait == 0 || window == "0" { // a single try records no waiter
		window, wake = "0", ""
	}
	// Tries record nothing until the wait starts to listen (Tag): a Lock that acquires at its first
	// try, the usual case, sends and builds no record.
	a.window = window
	a.args = [...]string{l.leaseMs, field, l.reentryArg, l.fenceArg, "0", "", "", "0", ""}
	spec := core.HoldSpec{
		Kind: kind, Name: l.name, Key: l.name, Field: field, Lease: l.lease,
		Renew: core.RenewSpec{Script: renewScript, Keys: l.keys[:1], Args: a.args[1:2]},
	}
	held, err := l.c.AcquireHold(ctx, spec, wait, core.Wait{
		Channel: l.channel,
		Wake:    wake,
		Grants:  a,
		Weight:  1,
		Policy:  pubsub.WakeOne,
		Try:     a.try,
		Undo:    a.undo,
	})
	if err != nil {
		if member := a.args[8]; member != "" {
			l.forget(ctx, field, member)
		}
		return nil, core.Errorf(kind, l.name, err)
	}
	if l.fenced {
		held = l.c.WithToken(held, kind, l.name, a.token)
	}
	return held, nil
}

// attempt is what the tries of one acquisition share, in one allocation.
type attempt struct {
	l      *Lock
	args   [9]string // the acquire script's ARGV; args[1] is the owner's field, args[8] its record
	window string    // the wait window, "0" when this acquisition does not wait
	token  int64
	score  int64 // the score the last failed try gave the record: a grant must have come after it
}

// Tag names the waiter's record (rlock_wake.lua), unique to this acquisition, and makes the tries
// from now on leave it.
func (a *attempt) Tag() string {
	if a.args[8] == "" && a.window != "0" {
		l := a.l
		a.args[4], a.args[5], a.args[6] = a.window, l.c.ID(), lingerMs
		a.args[8] = l.c.Record(a.args[1], l.grantMs, l.fenceArg)
	}
	return a.args[8]
}

// Claim takes the lock that a release handed to this waiter, if the grant came after its last try
// (see core.GrantFor): a grant made before it was taken by that try or found void (the lock expired,
// or was given back).
func (a *attempt) Claim(payload string) bool {
	token, ok := core.GrantFor(payload, a.score)
	if ok {
		a.token = token
	}
	return ok
}

func (a *attempt) try(ctx context.Context) (bool, time.Duration, error) {
	t, err := core.ReadLockTry(a.l.c.RunAcquire(ctx, acquireScript, a.l.keys[:], a.args[:]))
	if t.Acquired {
		a.token = t.Token
		return true, 0, err // Acquire gives it back when it was not replicated
	}
	if t.Recorded {
		a.args[7] = "1" // the script recorded the waiter: the try that succeeds removes it
		a.score = t.Score
	}
	return false, t.RetryIn, err
}

func (a *attempt) undo(ctx context.Context) { a.l.release(ctx, a.args[1]) }

// forget removes the record of a waiter that gave up, so that no release wakes its client for it, and
// gives back the lock if a release handed it to that waiter meanwhile.
func (l *Lock) forget(ctx context.Context, field, member string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RetryBound)
	defer cancel()
	keys := []string{l.name, l.channel, l.keys[2], l.keys[3], l.wakePrefix, l.keys[1]}
	l.c.Run(ctx, forgetScript, keys, []string{field, member, l.c.Publish(), l.c.NumSub()})
}

// Stray gives back a lock that a release handed to a waiter of this client that is no longer there.
func (a *attempt) Stray(member, _ string) {
	client, rest, _ := strings.Cut(member, ":")
	owner, _, ok := strings.Cut(rest, ":")
	if !ok {
		return
	}
	a.l.forget(context.Background(), client+":"+owner, member)
}

// Token returns the fencing token of the acquisition that ctx came from (see WithFencing).
func (l *Lock) Token(ctx context.Context) (int64, bool) {
	return l.c.Token(ctx, kind, l.name)
}

// Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
// Unlock. It returns an error matching redisync.ErrNotHeld, and changes nothing, when ctx carries no
// hold of the lock (never did, released it, or its lease ended), and redisync.ErrNotInnermost when
// holds taken inside it are still open. It releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.c.Unlock(ctx, kind, l.name, l.name, l.c.Owner, func(ctx context.Context, _ int64, field string) (int64, error) {
		return l.release(ctx, field)
	})
}

func (l *Lock) release(ctx context.Context, field string) (int64, error) {
	keys := []string{l.name, l.channel, l.c.RequestKey(l.latchKey), l.keys[2], l.keys[3], l.wakePrefix, l.keys[1]}
	args := []string{l.leaseMs, field, l.c.Publish(), latchTTL, l.c.NumSub()}
	n, err := l.c.Run(ctx, releaseScript, keys, args).AsInt64()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, core.ErrNotHeld
	}
	return n, nil
}

// ForceUnlock frees the lock whoever holds it, and wakes a waiter. It reports whether the lock was
// held. Holders on this Client see their ctx end with redisync.ErrLost at once; holders elsewhere at
// their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, core.Invalid(kind, l.name, "nil context")
	}
	keys := []string{l.name, l.channel, l.keys[2], l.keys[3], l.wakePrefix, l.keys[1]}
	n, err := l.c.Run(ctx, forceScript, keys, []string{l.c.Publish(), l.c.NumSub()}).AsInt64()
	if err != nil {
		return false, core.Errorf(kind, l.name, err)
	}
	l.c.LoseHolds(l.name, fmt.Errorf("%w: forced unlock", core.ErrLost))
	return n == 1, nil
}

// IsLocked reports whether any owner holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	return l.c.Exists(ctx, kind, l.name, l.name)
}

// IsHeld reports whether ctx's owner holds the lock (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many times ctx's owner holds the lock (0 when it does not). Like Unlock, it
// answers even when ctx has ended, since ctx here names the owner.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	owner, ok := core.OwnerID(ctx)
	if !ok {
		return 0, nil
	}
	return l.c.HoldCount(ctx, kind, l.name, l.name, l.c.Owner(owner))
}

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry (only a foreign writer can do that).
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	return l.c.TTL(ctx, kind, l.name, l.name)
}

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}
