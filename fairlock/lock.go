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

//go:generate go run ../internal/gen/lockface

import (
	"context"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/reentrant"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// spec is the fair lock in Redis: rlock's hash, renewed, extended and read by rlock's scripts, with
// a queue of waiters beside it that its own scripts acquire, release and leave by.
var spec = func() *core.Spec {
	s := reentrant.Spec("fair lock")
	s.Keys = map[string]string{
		"queue":     layout.FairLock.Queue,
		"deadlines": layout.FairLock.Deadlines,
		"counter":   layout.FairLock.Counter,
		"channel":   layout.FairLock.Channels, // a prefix: each waiter waits on its own channel
		"records":   layout.FairLock.Records,
	}
	s.Scripts = core.Scripts{
		Acquire: lua.Load("fairlock_acquire.lua"),
		Release: lua.Load("fairlock_release.lua"),
		Renew:   s.Scripts.Renew,
		Force:   lua.Load("fairlock_force_release.lua"),
		Leave:   lua.Load("fairlock_leave.lua"),
		Extend:  s.Scripts.Extend,
		State:   s.Scripts.State,
	}
	// The channel is this owner's alone, and one acquisition of the owner waits at a time.
	s.Policy = pubsub.WakeAll
	return s
}()

// waiting counts the waiters (Waiting).
var waiting = lua.Load("fairlock_waiting.lua")

// Lock is a distributed fair reentrant lock on one name. It is cheap to create and safe for concurrent
// use; two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	l core.Lock
	c *core.Client
}

// Option configures a Lock.
type Option func(*options)

type options struct {
	core.LockOptions
	slot time.Duration
}

// DefaultSlot is the wait slot of a Lock without WithSlot: Redisson's default fairLockWaitTimeout
// (its threadWaitTime), so that Go and Java waiters in one queue keep each other's places.
const DefaultSlot = 5 * time.Minute

// WithSlot sets the wait slot, Redisson's threadWaitTime (DefaultSlot unless set): how long a waiter
// may stay away from Redis before it loses its place. A waiter's deadline starts as Redisson's (the
// last waiter's deadline, or the end of the holder's lease, plus one slot), every try pushes it on to
// at least one slot per place in line from now, and a waiter of this package tries at least every
// third of a slot, so it keeps its place however long the lock is held. One whose process died is
// passed over as soon as a Go process sees that its Client no longer listens for its turn (its last
// try being more than 2 s old), and otherwise once it is at the head a slot after its last try.
//
// A Java waiter, which never pushes its deadline on, has it lowered by every acquisition ahead of it
// as Redisson lowers it: by the acquisition's slot (a Java tryLock(waitTime) by waitTime). So a Java
// acquisition lowers a Go waiter's deadline too: with Java processes in the line, keep the slot at least as long as Redisson's
// fairLockWaitTimeout and as the wait times of their tryLock calls, or a Java acquisition may cost a
// Go waiter its place in line (never the lock's exclusion).
func WithSlot(d time.Duration) Option { return func(o *options) { o.slot = d } }

// New returns the fair lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.slot < 0 || (o.slot > 0 && o.slot < 30*time.Millisecond) {
		return nil, errs.Invalid(spec.Kind, name, "slot %v: want 0 (default) or at least 30ms", o.slot)
	}
	if o.slot == 0 {
		o.slot = DefaultSlot
	}
	o.Values = map[string]string{"slot": strconv.FormatInt(o.slot.Milliseconds(), 10)}
	l := &Lock{c: core.Of(c)}
	if err := l.l.Init(l.c, spec, name, o.LockOptions); err != nil {
		return nil, err
	}
	return l, nil
}

// Waiting returns how many owners are in the queue, from every client. It may count waiters that
// died and have not been passed over yet.
func (l *Lock) Waiting(ctx context.Context) (int, error) {
	if ctx == nil {
		return 0, errs.Invalid(spec.Kind, l.l.Name(), "nil context")
	}
	c, name := l.c, l.l.Name()
	n, err := c.QueryScript(ctx, waiting, []string{name, c.Names().Prefixed(layout.FairLock.Queue, name)}, nil).AsInt64()
	if err != nil {
		return 0, errs.Errorf(spec.Kind, l.l.Name(), err)
	}
	return int(n), nil
}
