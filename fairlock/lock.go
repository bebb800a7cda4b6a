// Package fairlock is a distributed reentrant lock that grants in arrival order, Redisson's fair
// lock (RFairLock): the same keys, hash fields, queue, deadlines and messages in Redis, so Go and Java
// processes line up in one queue on the same name.
//
// The owner travels in the context as for package rlock: Lock returns a ctx that carries it, the same
// ctx (or one derived from it) may Lock again and must Unlock as many times, and that ctx ends with
// redisync.ErrReleased after the last Unlock or redisync.ErrLost when the lock is lost.
//
// A waiter takes a place at the end of the queue and waits on its own channel; an unlock wakes only
// the waiter at the head, so a handoff costs one message whatever the length of the line, and waiters
// further back are not woken by it. A waiter of this package also leaves a record beside the queue,
// and the unlock then hands it the lock, with its lease and fencing token, so that it returns without
// a try of its own; a waiter without a record (a Java one) is woken with Redisson's message and tries.
//
// Each place has a deadline in Redis: a waiter comes back at least every third of a slot (see
// WithSlot) to push its deadline on, and a waiter that does not come back (its process died) is passed
// over once its deadline is past. A waiter that gives up (its ctx ends, its wait bound passes) leaves
// the queue at once and gives its slot back to those behind it, and gives back the lock if an unlock
// handed it over meanwhile.
package fairlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
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

// latchTTL is how long a release remembers its answer, so that a release re-sent after a network
// error does not release twice.
const latchTTL = "10000"

const kind = "fair lock"

// Lock is a distributed fair reentrant lock on one name. It is cheap to create and safe for concurrent
// use; two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	c          *core.Client
	name       string
	lease      time.Duration
	slot       time.Duration
	reentrant  bool
	fenced     bool
	keys       [6]string // the acquire script's KEYS: the lock, queue, deadlines, counter, channel prefix, records
	queueKey   string
	timeoutKey string
	channel    string // prefix of every waiter's channel: "<channel>:<owner>"
	tokenKey   string
	recordsKey string // waiter records for hand-overs (fairlock_wake.lua)
	latchKey   string
	handOver   bool // a release may hand the lock to a waiter of ours
	leaseMs    string
	slotMs     string
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

// WithSlot sets the wait slot, Redisson's threadWaitTime: the time a waiter may stay away from Redis
// before it loses its place. A waiter's deadline in Redis is one slot per place in line from its last
// try, and every acquisition ahead of it takes one slot off; a waiter of this package tries again at
// least every third of a slot, so a live waiter keeps its place however long the lock is held, and a
// waiter whose process died is passed over once it is at the head and one slot has passed since its
// last try.
//
// The default is the Client's watchdog timeout (30 s unless changed), not Redisson's 5 minutes:
// Redisson's waiters never renew their place, so its slot must cover a whole hold, and a dead waiter
// there stalls the line for 5 minutes. Ours renew, so the slot only has to cover a stall of the
// waiting process or of Redis, which is exactly what the watchdog timeout covers for a holder: a dead
// process then gives up its place as soon as it would give up the lock.
//
// Every process that shares a lock should use the same slot, since each acquisition moves every
// deadline behind it one slot (the acquirer's) sooner. When Java processes share the lock, set
// Redisson's slot here (5 minutes unless configured): with a shorter one, a Java acquisition can move
// a Go waiter's deadline into the past and cost it its place in line (never the lock's exclusion).
func WithSlot(d time.Duration) Option { return func(l *Lock) { l.slot = d } }

// NonReentrant makes re-entry an error: an owner that locks again gets redisync.ErrAlreadyHeld, and
// its hold is unchanged.
func NonReentrant() Option { return func(l *Lock) { l.reentrant = false } }

// WithFencing makes every acquisition, re-entry included, take a fencing token from a counter in
// Redis (Redisson's RFencedLock counter, shared with a package rlock lock of the same name): a number
// that grows with each acquisition, which a store can use to reject writes from a holder that has
// been overtaken. Read it with Token. The counter is a key without expiry, one per lock name.
func WithFencing() Option { return func(l *Lock) { l.fenced = true } }

// New returns the fair lock called name.
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
	if l.slot < 0 || (l.slot > 0 && l.slot < 30*time.Millisecond) {
		return nil, core.Invalid(kind, name, "slot %v: want 0 (default) or at least 30ms", l.slot)
	}
	if l.slot == 0 {
		l.slot = l.c.Config().WatchdogTimeout
	}
	l.queueKey = core.Prefixed("redisson_lock_queue", name)
	l.timeoutKey = core.Prefixed("redisson_lock_timeout", name)
	l.channel = core.Prefixed("redisson_lock__channel", name)
	l.tokenKey = core.Prefixed("redisson_lock_token", name)
	l.recordsKey = core.Prefixed("redisync_fair_waiters", name)
	l.latchKey = core.Prefixed("redisson_unlock_latch", name) + ":"
	l.keys = [6]string{name, l.queueKey, l.timeoutKey, l.tokenKey, l.channel, l.recordsKey}
	// Subscriber counts cannot be trusted on a cluster with classic Pub/Sub, and an acquisition that
	// must wait for the replicas needs a try of its own: there a release only wakes.
	l.handOver = l.c.NumSub() != "" && l.c.Config().ReplicaAck == 0
	lease := l.lease
	if lease == 0 {
		lease = l.c.Config().WatchdogTimeout
	}
	l.leaseMs = strconv.FormatInt(lease.Milliseconds(), 10)
	l.slotMs = strconv.FormatInt(l.slot.Milliseconds(), 10)
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

// Lock waits in line until it acquires the lock, ctx ends, or the Client is closed. It returns a ctx
// that carries the owner and ends when the lock stops being held; pass it to Unlock, and to the work
// done under the lock so that the work stops if the lock is lost.
//
// When ctx ends first, the waiter leaves the queue before Lock returns. When the Client is closed,
// nothing more is sent: the place is passed over once its slot has passed, as a dead process's is.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) {
	return l.acquire(ctx, -1)
}

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired, and leaves the queue,
// when the lock is not acquired within wait. With wait 0 it tries once and never joins the queue: it
// acquires only if the lock is free and nobody waits for it. ctx may end the wait earlier; its
// deadline is never the lock's lease.
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
	field := l.c.Owner(owner)
	a := &attempt{l: l, field: field}
	a.args = [...]string{l.leaseMs, field, l.slotMs, l.reentryArg, l.fenceArg, flag(wait != 0), l.c.Publish(), "", l.c.NumSub()}
	spec := core.HoldSpec{
		Kind: kind, Name: l.name, Key: l.name, Field: field, Lease: l.lease,
		Renew: core.RenewSpec{Script: renewScript, Keys: l.keys[:1], Args: a.args[1:2]},
	}
	w := core.Wait{
		Channel: l.channel + ":" + field,
		Weight:  1,
		// The channel is this owner's alone: every goroutine of the owner that waits may go.
		Policy: pubsub.WakeAll,
		Try:    a.try,
		Undo:   a.undo,
	}
	if l.handOver {
		w.Grants = a
	}
	held, err := l.c.AcquireHold(ctx, spec, wait, w)
	if err != nil {
		if wait != 0 && !errors.Is(err, core.ErrClosed) && !errors.Is(err, core.ErrAlreadyHeld) {
			// Another goroutine of the owner that still waits keeps the owner's place.
			queued := l.c.Notifier().Waiting(l.channel+":"+field) == 0
			if tag := a.args[7]; queued || tag != "" {
				l.leave(ctx, field, tag, queued)
			}
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
	l     *Lock
	field string
	args  [9]string // the acquire script's ARGV; args[7] is the acquisition's tag once it listens
	token int64
	score int64 // the score the last failed try gave the record: a grant must have come after it
}

func (a *attempt) try(ctx context.Context) (bool, time.Duration, error) {
	t, err := core.ReadLockTry(a.l.c.RunAcquire(ctx, acquireScript, a.l.keys[:], a.args[:]))
	if t.Acquired {
		a.token = t.Token
		return true, 0, err // Acquire gives it back when it was not replicated
	}
	if t.Recorded {
		a.score = t.Score
	}
	return false, t.RetryIn, err
}

func (a *attempt) undo(ctx context.Context) { a.l.release(ctx, a.field) }

// Tag names the acquisition (fairlock_wake.lua), and makes the tries from now on leave a record
// under that name.
func (a *attempt) Tag() string {
	if a.args[7] == "" {
		a.args[7] = a.l.c.RequestID()
	}
	return a.args[7]
}

// Claim takes the lock that a release handed to this waiter, if the grant came after its last try
// (see core.GrantFor).
func (a *attempt) Claim(payload string) bool {
	token, ok := core.GrantFor(payload, a.score)
	if ok {
		a.token = token
	}
	return ok
}

// Stray gives back a lock that a release handed to an acquisition of this owner that is no longer
// there.
func (a *attempt) Stray(tag, _ string) { a.l.leave(context.Background(), a.field, tag, false) }

// leave gives back a grant made to the acquisition tagged tag that it did not take, and, when queued,
// takes field out of the queue after a wait that did not acquire.
func (l *Lock) leave(ctx context.Context, field, tag string, queued bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RetryBound)
	defer cancel()
	keys := []string{l.name, l.queueKey, l.timeoutKey, l.channel, l.recordsKey, l.tokenKey}
	l.c.Run(ctx, leaveScript, keys, []string{field, l.slotMs, l.c.Publish(), tag, flag(queued), l.c.NumSub()})
}

// Token returns the fencing token of the acquisition that ctx came from (see WithFencing).
func (l *Lock) Token(ctx context.Context) (int64, bool) {
	return l.c.Token(ctx, kind, l.name)
}

// Unlock releases the hold that ctx carries: the lock is free when every Lock has been matched by an
// Unlock, and then the waiter at the head of the queue is woken. It returns an error matching
// redisync.ErrNotHeld, and changes nothing, when ctx carries no hold of the lock (never did, released
// it, or its lease ended), and redisync.ErrNotInnermost when holds taken inside it are still open. It releases even when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.c.Unlock(ctx, kind, l.name, l.name, l.c.Owner, func(ctx context.Context, _ int64, field string) (int64, error) {
		return l.release(ctx, field)
	})
}

func (l *Lock) release(ctx context.Context, field string) (int64, error) {
	keys := []string{l.name, l.queueKey, l.timeoutKey, l.channel, l.latchKey + l.c.RequestID(), l.recordsKey, l.tokenKey}
	args := []string{l.leaseMs, field, l.c.Publish(), latchTTL, l.slotMs, l.c.NumSub()}
	n, err := l.c.Run(ctx, releaseScript, keys, args).AsInt64()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, core.ErrNotHeld
	}
	return n, nil
}

// ForceUnlock frees the lock whoever holds it, and wakes the waiter at the head of the queue. It
// reports whether the lock was held. Holders on this Client see their ctx end with redisync.ErrLost
// at once; holders elsewhere at their next renewal. The queue is kept.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, core.Invalid(kind, l.name, "nil context")
	}
	keys := []string{l.name, l.queueKey, l.timeoutKey, l.channel, l.recordsKey, l.tokenKey}
	n, err := l.c.Run(ctx, forceScript, keys, []string{l.c.Publish(), l.slotMs, l.c.NumSub()}).AsInt64()
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

// Waiting returns how many owners are in the queue, from every client. It may count waiters that
// died and have not been passed over yet.
func (l *Lock) Waiting(ctx context.Context) (int, error) {
	rdb := l.c.RDB()
	n, err := rdb.Do(ctx, rdb.B().Llen().Key(l.queueKey).Build()).AsInt64()
	if err != nil {
		return 0, core.Errorf(kind, l.name, err)
	}
	return int(n), nil
}

// Do runs fn while holding the lock: it locks (waiting as Lock does), runs fn with the lock's ctx,
// and unlocks. fn's ctx ends if the lock is lost; Do then returns fn's error joined with the cause.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}
