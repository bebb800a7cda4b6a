// Package spinlock is a distributed reentrant lock whose waiters poll instead of listening:
// Redisson's RSpinLock. It is the same lock in Redis as package rlock and as Redisson's RLock and
// RSpinLock on the same name (the same hash and fields, and rlock's scripts), so all of them exclude
// each other.
//
// A waiter subscribes to nothing and leaves no record: after a try that fails, it sleeps as its
// Backoff says (by default Redisson's ExponentialBackOff: 1 ms doubling up to 128 ms) and tries
// again. Pick it over rlock for very many short-lived locks, whose waits are shorter than a
// subscription costs, or where subscription connections are scarce (a large cluster, where each
// node a waiter listens on takes a connection). Pick rlock where waits are long or contended by
// many: its waiters cost nothing while they wait, and a release hands the lock over at once, where
// a spinning waiter learns of it at its next try and sends a command every sleep.
//
// Otherwise it is rlock: the owner travels in the context, re-entry, fan-out turns, the watchdog,
// fencing, and every call taking effect once whatever the network loses. A release still wakes, or
// hands the lock over to, rlock and Redisson waiters on the same name.
package spinlock

//go:generate go run ../internal/gen/lockface

import (
	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/reentrant"
)

// spec is rlock's: the same keys and scripts, so that it is the same lock in Redis.
var spec = reentrant.Spec("spin lock")

// Lock is a distributed reentrant spin lock on one name. It is cheap to create and safe for
// concurrent use; two Lock values with the same name on the same Client are the same lock, and so
// is an rlock.Lock of that name.
type Lock struct{ l core.Lock }

// Option configures a Lock.
type Option func(*options)

type options struct {
	core.LockOptions
	backoff Backoff
}

// WithBackoff sets how a waiter sleeps between tries (Redisson's getSpinLock(name, backOff)):
// ExponentialBackoff, ConstantBackoff, or a policy of one's own. Without it, ExponentialBackoff{}
// (Redisson's LockOptions.defaults()). New refuses nil and bad values with
// redisync.ErrInvalidArgument.
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// New returns the spin lock called name (Redisson's getSpinLock).
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	o := options{backoff: ExponentialBackoff{}}
	for _, opt := range opts {
		opt(&o)
	}
	var err error
	if o.Backoff, err = policy(o.backoff); err != nil {
		return nil, errs.Invalid(spec.Kind, name, "%v", err)
	}
	l := new(Lock)
	if err := l.l.Init(core.Of(c), spec, name, o.LockOptions); err != nil {
		return nil, err
	}
	return l, nil
}
