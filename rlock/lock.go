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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/hashlock"
	"github.com/redisync/redisync/internal/pubsub"
	"github.com/redisync/redisync/lua"
)

var (
	acquireScript = lua.Load("wake_records.lua", "rlock_acquire.lua")
	releaseScript = lua.LoadRetryable("wake_records.lua", "rlock_wake.lua", "rlock_release.lua")
	forgetScript  = lua.LoadRetryable("wake_records.lua", "rlock_wake.lua", "rlock_forget.lua")
	forceScript   = lua.Load("wake_records.lua", "rlock_wake.lua", "rlock_force_release.lua")
	renewScript   = lua.Load("extend.lua", "rlock_renew.lua")
)

// latchTTL is how long a release that leaves holds remembers its answer, so that a release re-sent
// after a network error does not release twice; the latch is deleted once the answer is in.
const latchTTL = "10000"

const kind = "lock"

// lingerMs: a client keeps listening on a lock's wake channel this long after its last waiter left.
var lingerMs = strconv.FormatInt(pubsub.Linger.Milliseconds(), 10)

// Every script takes a prefix of these KEYS (rlock_wake.lua).
const (
	keyLock = iota
	keyCounter
	keyWaiters
	keyClients
	keyChannel
	keyWakePrefix
	keyLatch
	nKeys
)

// The acquire script's ARGV (rlock_acquire.lua).
const (
	argLease     = iota
	argField     // the owner's field
	argReentrant // "1" when re-entry is allowed
	argFenced    // "1" when fenced
	argWindow    // ms within which the waiter tries again; "0": it does not wait, and is not recorded
	argClient    // this client's id, for the clients' record
	argLinger    // ms the client listens after its last waiter left
	argRecorded  // "1" once a try recorded the waiter
	argRecord    // the waiter's record
	nArgs
)

// Lock is a distributed reentrant lock on one name. It is cheap to create and safe for concurrent use;
// two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	h hashlock.Lock
	p protocol // in the same allocation
}

// protocol is what this lock does in Redis (hashlock.Protocol).
type protocol struct {
	c        *core.Client
	keys     [nKeys - 1]string // every key but the latch, which is per request
	latch    string            // the latch key without the request id
	wakeOnce sync.Once
	wake     string // this client's wake channel, built by the first wait (wakeChannel)
	leaseMs  string
	windowMs string
	reentry  string
	fenced   string
}

// Option configures a Lock.
type Option func(*options)

type options struct{ hashlock.Options }

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

func apply(opts []Option) options {
	o := new(options)
	for _, opt := range opts {
		opt(o)
	}
	return *o
}

// New returns the lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	var o options
	if len(opts) > 0 { // o escapes to the options: only then
		o = apply(opts)
	}
	l := &Lock{p: protocol{c: core.Of(c)}}
	p := &l.p
	h, err := hashlock.New(p.c, kind, name, o.Options, p)
	if err != nil {
		return nil, err
	}
	l.h = h
	side := p.c.SideKeys(h.Name, "redisson_lock_token", "redisync_lock_waiters", "redisync_lock_clients",
		"redisson_lock__channel", "redisync_lock__wake", "redisson_unlock_latch")
	p.keys = [...]string{h.Name, side[0], side[1], side[2], side[3], side[4] + ":"}
	p.latch = side[5]
	p.windowMs = "0" // no directed wake-up where subscriber counts cannot be trusted
	if p.c.NumSub() != "" {
		p.windowMs = p.c.WaitWindowMs()
	}
	p.leaseMs = h.LeaseMs
	p.reentry, p.fenced = h.ReentryArg, h.FenceArg
	return l, nil
}

// wakeChannel returns this client's wake channel for the lock.
func (p *protocol) wakeChannel() string {
	p.wakeOnce.Do(func() { p.wake = p.keys[keyWakePrefix] + p.c.ID() })
	return p.wake
}

func (p *protocol) Field(owner int64) string { return p.c.Owner(owner) }

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.h.Name }

// Lock waits until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx that
// carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work done
// under the lock so that the work stops if the lock is lost.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.h.Lock(ctx) }

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when the lock is not
// acquired within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier;
// its deadline is never the lock's lease.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	return l.h.TryLock(ctx, wait)
}

func (p *protocol) Begin(ctx context.Context, _ int64, field string, wait time.Duration) (context.Context, hashlock.Acquisition) {
	a := &attempt{p: p}
	// Tries record nothing until the wait starts to listen (Tag): a Lock that acquires at its first
	// try, the usual case, sends and builds no record.
	a.window = p.windowMs
	if wait == 0 || a.window == "0" { // a single try records no waiter
		a.window = "0"
	} else {
		a.wake = p.wakeChannel()
	}
	a.args = [nArgs]string{argLease: p.leaseMs, argField: field, argReentrant: p.reentry, argFenced: p.fenced,
		argWindow: "0", argRecorded: "0"}
	return ctx, a
}

// attempt is what the tries of one acquisition share, in one allocation.
type attempt struct {
	hashlock.Grant
	p      *protocol
	args   [nArgs]string
	window string // the wait window, "0" when this acquisition does not wait
	wake   string // the wake channel, "" when this acquisition does not wait
}

func (a *attempt) Wait() core.Wait {
	return core.Wait{
		Channel: a.p.keys[keyChannel],
		Wake:    a.wake,
		Grants:  a,
		Weight:  1,
		Policy:  pubsub.WakeOne,
		Tries:   a,
	}
}

func (a *attempt) Renew() core.RenewSpec {
	return core.RenewSpec{Script: renewScript, Keys: a.p.keys[:keyLock+1], Args: a.args[argField : argField+1]}
}

// End forgets the record of a waiter that gave up.
func (a *attempt) End(ctx, held context.Context, err error) context.Context {
	if member := a.args[argRecord]; err != nil && member != "" {
		a.p.c.Leave(func() { a.p.forget(ctx, a.args[argField], member) })
	}
	return held
}

// Tag names the waiter's record (rlock_wake.lua), unique to this acquisition, and makes the tries
// from now on leave it.
func (a *attempt) Tag() string {
	if a.args[argRecord] == "" && a.window != "0" {
		a.args[argWindow], a.args[argClient], a.args[argLinger] = a.window, a.p.c.ID(), lingerMs
		// The lease a release that hands the lock over gives it: none ("0": a wake-up only) when an
		// acquisition must wait for the replicas, which only a try of its own does.
		grant := a.p.leaseMs
		if a.p.c.AcksReplicas(context.Background(), a.p.keys[keyLock]) {
			grant = "0"
		}
		a.args[argRecord] = a.p.c.Record(a.args[argField], grant, a.p.fenced)
	}
	return a.args[argRecord]
}

func (a *attempt) Try(ctx context.Context) (bool, time.Duration, error) {
	var sent time.Time
	if a.args[argRecord] != "" {
		// A listing made less than half the linger ago still covers this wait's window and half
		// the linger after it (the server's clock runs at ours' rate: only elapsed time counts), so
		// most tries spend no ZADD and PEXPIRE on the clients record.
		sent = time.Now()
		a.args[argLinger] = ""
		if a.p.c.ListAgain(a.p.keys[keyClients], pubsub.Linger/2) {
			a.args[argLinger] = lingerMs
		}
	}
	// A try that neither records a waiter nor follows one that did, the usual first try, sends only
	// what it uses (rlock_acquire.lua): fewer strings for the server to make.
	keys, args := a.p.keys[:keyClients+1], a.args[:]
	if a.args[argRecorded] != "1" && a.args[argWindow] == "0" {
		keys, args = keys[:keyWaiters+1], args[:argWindow+1] // the waiters' key holds a Java turn
	}
	t, err := core.ReadLockTry(a.p.c.RunAcquire(ctx, acquireScript, keys, args))
	if t.Recorded && a.args[argLinger] != "" {
		a.p.c.Listed(a.p.keys[keyClients], sent, pubsub.Linger/2)
	}
	a.Tried(t)
	if t.Recorded {
		a.args[argRecorded] = "1" // the try that succeeds removes the record
	}
	return t.Acquired, t.RetryIn, err // Acquire gives back an acquisition that was not replicated
}

func (a *attempt) Undo(ctx context.Context) { a.p.Release(ctx, 0, a.args[argField], 0) }

// forget removes the record of a waiter that gave up, so that no release wakes its client for it, and
// gives back the lock if a release handed it to that waiter meanwhile.
func (p *protocol) forget(ctx context.Context, field, member string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RetryBound)
	defer cancel()
	p.c.Run(ctx, forgetScript, p.keys[:keyWakePrefix+1], []string{field, member, p.c.Publish(), p.c.NumSub()})
}

// Stray gives back a lock that a release handed to a waiter of this client that is no longer there.
func (a *attempt) Stray(member, _ string) {
	client, rest, _ := strings.Cut(member, ":")
	owner, _, ok := strings.Cut(rest, ":")
	if !ok {
		return
	}
	a.p.forget(context.Background(), client+":"+owner, member)
}

// Token returns the fencing token of the acquisition that ctx came from (see WithFencing).
func (l *Lock) Token(ctx context.Context) (int64, bool) { return l.h.Token(ctx) }

// Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
// Unlock. It returns an error matching redisync.ErrNotHeld, and changes nothing, when ctx carries no
// hold of the lock (never did, released it, or its lease ended), and redisync.ErrNotInnermost when
// holds taken inside it are still open. It releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error { return l.h.Unlock(ctx) }

func (p *protocol) Release(ctx context.Context, _ int64, field string, held int) (int64, error) {
	keys := [nKeys]string{}
	copy(keys[:], p.keys[:])
	keys[keyLatch] = p.c.RequestKey(p.latch)
	args := []string{p.leaseMs, field, p.c.Publish(), latchTTL, p.c.NumSub(), hashlock.Held(held), "0"}
	return hashlock.Release(ctx, p.c, releaseScript, keys[:], args, keys[keyLatch], held)
}

// ForceUnlock frees the lock whoever holds it, and wakes a waiter. It reports whether the lock was
// held. Holders on this Client see their ctx end with redisync.ErrLost at once; holders elsewhere at
// their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) { return l.h.ForceUnlock(ctx) }

func (p *protocol) ForceRelease(ctx context.Context) (bool, error) {
	n, err := p.c.Run(ctx, forceScript, p.keys[:keyWakePrefix+1], []string{p.c.Publish(), p.c.NumSub()}).AsInt64()
	return n == 1, err
}

// IsLocked reports whether any owner holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.h.Exists(ctx) }

// IsHeld reports whether ctx's owner holds the lock (Redisson's isHeldByCurrentThread).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) { return l.h.IsHeld(ctx) }

// HoldCount returns how many times ctx's owner holds the lock (0 when it does not). Like Unlock, it
// answers even when ctx has ended, since ctx here names the owner.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.h.HoldCount(ctx) }

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it is held without expiry (only a foreign writer can do that).
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return l.h.TTL(ctx) }

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return l.h.Do(ctx, fn)
}
