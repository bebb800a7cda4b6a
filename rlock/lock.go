// Package rlock is a distributed reentrant lock, Redisson's RLock: the same keys, hash fields and
// messages in Redis, so Go and Java processes exclude each other on the same name.
//
// The owner travels in the context (see package redisync): Lock returns a ctx that carries it, and
// that ctx, or any ctx derived from it, may Lock again (the hold count goes up); each hold is
// released with Unlock of its own ctx, innermost first. Goroutines that share a held ctx take turns.
// That ctx ends when the lock stops being held: with redisync.ErrReleased after the last Unlock, with
// redisync.ErrLost when the lease ends or the watchdog finds the lock gone.
//
// A waiter records itself beside the lock; a release hands the lock to the waiter that tried least
// recently, with that waiter's lease and fencing token, and tells its Client, so that the waiter
// returns without a command of its own. Java waiters, which leave no record, are still woken by
// Redisson's unlock message.
//
// Every call takes effect once, whatever the network loses: a call whose answer is lost is sent
// again, and the scripts tell by the hold count the Client expects whether the first send acted.
package rlock

//go:generate go run ../internal/gen/lockface

import (
	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/reentrant"
)

// spec is the reentrant lock in Redis: its keys, its scripts, and how its waiters wait.
var spec = reentrant.Spec("lock")

// Lock is a distributed reentrant lock on one name. It is cheap to create and safe for concurrent use;
// two Lock values with the same name on the same Client are the same lock.
type Lock struct {
	l core.Lock
	o options
}

// Option configures a Lock.
type Option func(*options)

type options struct{ core.LockOptions }

// New returns the lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*Lock, error) {
	l := new(Lock) // the options too: one allocation
	for _, opt := range opts {
		opt(&l.o)
	}
	if err := l.l.Init(core.Of(c), spec, name, l.o.LockOptions); err != nil {
		return nil, err
	}
	return l, nil
}
