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
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/hashlock"
	"github.com/redisync/redisync/internal/pubsub"
	"github.com/redisync/redisync/lua"
)

var (
	acquireScript = lua.Load("extend.lua", "fairlock_wake.lua", "fairlock_acquire.lua")
	releaseScript = lua.LoadRetryable("extend.lua", "fairlock_wake.lua", "fairlock_release.lua")
	leaveScript   = lua.LoadRetryable("fairlock_wake.lua", "fairlock_leave.lua")
	forceScript   = lua.Load("fairlock_wake.lua", "fairlock_force_release.lua")
	// The hold itself is an ordinary Redisson lock hash, renewed as package rlock renews it.
	renewScript = lua.Load("extend.lua", "rlock_renew.lua")
)

// latchTTL is how long a release that leaves holds remembers its answer, so that a release re-sent
// after a network error does not release twice; the latch is deleted once the answer is in.
const latchTTL = "10000"

const kind = "fair lock"

// Every script takes a prefix of these KEYS (fairlock_wake.lua).
const (
	keyLock = iota
	keyQueue
	keyDeadlines
	keyCounter
	keyChannel // the prefix of every waiter's channel: "<channel>:<owner>"
	keyRecords
	keyLatch
	nKeys
)

// The acquire script's ARGV (fairlock_acquire.lua).
const (
	argLease = iota
	argField
	argSlot
	argReentrant
	argFenced
	argQueue   // "1" to take a place in the queue when not acquired
	argPublish // the publish command
	argTag     // the acquisition's tag once it listens for a hand-over
	argNumSub  // the numsub command, "" for no hand-over
	nArgs
)

// Lock is a distributed fair reentrant lock on one name. It is cheap to create and safe for concurrent
// use; two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	h hashlock.Lock
	p *protocol
}

// protocol is what this lock does in Redis (hashlock.Protocol).
type protocol struct {
	c        *core.Client
	keys     [nKeys - 1]string // every key but the latch, which is per request
	latch    string            // the latch key without the request id
	handOver bool              // a release may hand the lock to a waiter of ours
	leaseMs  string
	slotMs   string
	reentry  string
	fenced   string
}

// Option configures a Lock.
type Option func(*options)

type options struct {
	hashlock.Options
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
// try being more than 2 s old), and after its deadline otherwise.
//
// An acquisition lowers the deadlines of those behind by its own slot (a Java tryLock(waitTime) by
// waitTime): with Java processes in the line, keep the slot at least as long as Redisson's
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
	p := &protocol{c: core.Of(c)}
	h, err := hashlock.New(p.c, kind, name, o.Options, p)
	if err != nil {
		return nil, err
	}
	if o.slot < 0 || (o.slot > 0 && o.slot < 30*time.Millisecond) {
		return nil, core.Invalid(kind, name, "slot %v: want 0 (default) or at least 30ms", o.slot)
	}
	if o.slot == 0 {
		o.slot = DefaultSlot
	}
	side := p.c.SideKeys(h.Name, "redisson_lock_queue", "redisson_lock_timeout", "redisson_lock_token",
		"redisson_lock__channel", "redisync_fair_waiters", "redisson_unlock_latch")
	p.keys = [...]string{h.Name, side[0], side[1], side[2], side[3], side[4]}
	p.latch = side[5]
	// Subscriber counts cannot be trusted on a cluster with classic Pub/Sub, and an acquisition that
	// must wait for the replicas needs a try of its own (see Wait): there a release only wakes.
	p.handOver = p.c.NumSub() != ""
	p.leaseMs = h.LeaseMs
	p.slotMs = strconv.FormatInt(o.slot.Milliseconds(), 10)
	p.reentry, p.fenced = h.ReentryArg, h.FenceArg
	return &Lock{h: h, p: p}, nil
}

func (p *protocol) Field(owner int64) string { return p.c.Owner(owner) }

// Name returns the lock's name, which is also its key in Redis.
func (l *Lock) Name() string { return l.h.Name }

// Lock waits in line until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx
// that carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work
// done under the lock so that the work stops if the lock is lost.
//
// When ctx ends first, the waiter leaves the queue before Lock returns (on its own afterwards when
// Redis does not answer that within core.Overtime, a quarter second). When the Client is closed,
// nothing more is sent: the place is passed over as a dead process's is (see WithSlot).
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.h.Lock(ctx) }

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired, and leaves the queue,
// when the lock is not acquired within wait. With wait 0 it tries once and never joins the queue: it
// acquires only if the lock is free and nobody waits for it. ctx may end the wait earlier; its
// deadline is never the lock's lease.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	return l.h.TryLock(ctx, wait)
}

func (p *protocol) Begin(ctx context.Context, _ int64, field string, wait time.Duration) (context.Context, hashlock.Acquisition) {
	a := &attempt{p: p, waits: wait != 0}
	a.args = [nArgs]string{argLease: p.leaseMs, argField: field, argSlot: p.slotMs, argReentrant: p.reentry,
		argFenced: p.fenced, argQueue: hashlock.Flag(wait != 0), argPublish: p.c.Publish(), argNumSub: p.c.NumSub()}
	return ctx, a
}

// attempt is what the tries of one acquisition share, in one allocation.
type attempt struct {
	hashlock.Grant
	p     *protocol
	args  [nArgs]string
	waits bool
	tried atomic.Bool // a try was sent (it may run apart: see core.Acquire)
}

func (a *attempt) Wait() core.Wait {
	w := core.Wait{
		Channel: a.p.keys[keyChannel] + ":" + a.args[argField],
		Weight:  1,
		// The channel is this owner's alone, and one acquisition of the owner waits at a time.
		Policy: pubsub.WakeAll,
		Try:    a.try,
		Undo:   a.undo,
	}
	if a.p.handOver && !a.p.c.AcksReplicas(context.Background(), a.p.keys[keyLock]) {
		w.Grants = a
	}
	return w
}

func (a *attempt) Renew() core.RenewSpec {
	return core.RenewSpec{Script: renewScript, Keys: a.p.keys[:keyLock+1], Args: a.args[argField : argField+1]}
}

// End takes a waiter that gave up out of the queue (and gives back a grant it did not take).
func (a *attempt) End(ctx, held context.Context, err error) context.Context {
	if err != nil && a.waits && a.tried.Load() && !errors.Is(err, core.ErrClosed) && !errors.Is(err, core.ErrAlreadyHeld) {
		field, tag := a.args[argField], a.args[argTag]
		a.p.c.Leave(func() { a.p.leave(ctx, field, tag, true) })
	}
	return held
}

func (a *attempt) try(ctx context.Context) (bool, time.Duration, error) {
	a.tried.Store(true)
	t, err := core.ReadLockTry(a.p.c.RunAcquire(ctx, acquireScript, a.p.keys[:keyRecords+1], a.args[:]))
	a.Tried(t)
	return t.Acquired, t.RetryIn, err // Acquire gives back an acquisition that was not replicated
}

func (a *attempt) undo(ctx context.Context) { a.p.Release(ctx, 0, a.args[argField], 0) }

// Tag names the acquisition (fairlock_wake.lua), and makes the tries from now on leave a record
// under that name.
func (a *attempt) Tag() string {
	if a.args[argTag] == "" {
		a.args[argTag] = a.p.c.RequestID()
	}
	return a.args[argTag]
}

// Stray gives back a lock that a release handed to an acquisition of this owner that is no longer
// there.
func (a *attempt) Stray(tag, _ string) { a.p.leave(context.Background(), a.args[argField], tag, false) }

// leave gives back a grant made to the acquisition tagged tag that it did not take, and, when queued,
// takes field out of the queue after a wait that did not acquire.
func (p *protocol) leave(ctx context.Context, field, tag string, queued bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RetryBound)
	defer cancel()
	args := []string{field, p.slotMs, p.c.Publish(), tag, hashlock.Flag(queued), p.c.NumSub()}
	p.c.Run(ctx, leaveScript, p.keys[:keyRecords+1], args)
}

// Token returns the fencing token of the acquisition that ctx came from (see WithFencing).
func (l *Lock) Token(ctx context.Context) (int64, bool) { return l.h.Token(ctx) }

// Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
// Unlock, and then the waiter at the head of the queue is woken. It returns an error matching
// redisync.ErrNotHeld, and changes nothing, when ctx carries no hold of the lock (never did, released
// it, or its lease ended), and redisync.ErrNotInnermost when holds taken inside it are still open.
// It releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error { return l.h.Unlock(ctx) }

func (p *protocol) Release(ctx context.Context, _ int64, field string, held int) (int64, error) {
	var keys [nKeys]string
	copy(keys[:], p.keys[:])
	keys[keyLatch] = p.c.RequestKey(p.latch)
	args := []string{p.leaseMs, field, p.c.Publish(), latchTTL, p.slotMs, p.c.NumSub(), hashlock.Held(held), "0"}
	return hashlock.Release(ctx, p.c, releaseScript, keys[:], args, keys[keyLatch], held)
}

// ForceUnlock frees the lock whoever holds it, and wakes the waiter at the head of the queue. It
// reports whether the lock was held. Holders on this Client see their ctx end with redisync.ErrLost
// at once; holders elsewhere at their next renewal. The queue is kept.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) { return l.h.ForceUnlock(ctx) }

func (p *protocol) ForceRelease(ctx context.Context) (bool, error) {
	n, err := p.c.Run(ctx, forceScript, p.keys[:keyRecords+1], []string{p.c.Publish(), p.slotMs, p.c.NumSub()}).AsInt64()
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

// Waiting returns how many owners are in the queue, from every client. It may count waiters that
// died and have not been passed over yet.
func (l *Lock) Waiting(ctx context.Context) (int, error) {
	n, err := l.p.c.Query(ctx, l.p.c.RDB().B().Llen().Key(l.p.keys[keyQueue]).Build()).AsInt64()
	if err != nil {
		return 0, core.Errorf(kind, l.h.Name, err)
	}
	return int(n), nil
}

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return l.h.Do(ctx, fn)
}
