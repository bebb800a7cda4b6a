// Package rwlock is a distributed read-write lock, Redisson's RReadWriteLock: the same keys, hash
// fields and messages in Redis, so Go and Java processes exclude each other on the same name.
//
// An RWLock hands out two locks over one name: its ReadLock may be held by many owners at once, its
// WriteLock by one owner, and never both by different owners. Each has the API of package rlock:
// Lock, TryLock with a wait bound, a fixed lease or the Client's watchdog, Unlock, ForceUnlock,
// queries, and Do. The owner travels in the context as it does there.
//
// Downgrade: the owner of the write lock may also take the read lock, and keeps reading after it
// releases the write lock; readers waiting meanwhile are woken at once (Redisson leaves them waiting
// for the lock's TTL). Upgrade is refused: an owner that reads and asks for the write lock gets
// ErrUpgrade at once. Redisson blocks instead, which deadlocks as soon as two readers try it, and
// waits for ever even with one, since its own read hold never goes away.
//
// Each read hold has its own lease in Redis ("{N}:OWNER:rwlock_timeout:k"), and the lock lives as
// long as the longest one: the read holds of a Client that died without unlocking age out within its
// watchdog timeout (or their fixed lease) while the other readers keep theirs. The watchdog renews
// only its own owners' leases; Redisson's renews every reader's, which keeps a dead reader's lease
// alive as long as any live reader renews, so that a writer still waits up to a whole lease after the
// last live reader has left. A read hold whose lease key is found gone is reported lost.
//
// The read lock taken with the ctx the write lock returned outlives the write release: its ctx ends
// with the read hold, or with the ctx the write lock was taken with.
//
// Fairness: by default, as in Redisson, a reader gets in whenever no writer holds the lock, so a
// stream of overlapping readers can starve a writer for ever. WithWriterPreference makes a waiting
// writer keep new readers out until it is in; it is honoured by this package only (a Java reader
// does not know of it).
package rwlock

import (
	"strconv"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/layout"
)

// ErrUpgrade: an owner that holds the read lock asked for the write lock. Upgrading is refused at
// once, since waiting could only end when the owner's own read holds are gone. It also matches
// redisync.ErrAlreadyHeld. The read holds are unchanged.
var ErrUpgrade error = upgradeError{}

type upgradeError struct{}

func (upgradeError) Error() string {
	return "redisync: the owner holds the read lock, which is never upgraded to the write lock"
}

func (upgradeError) Is(target error) bool { return target == errs.ErrAlreadyHeld }

const kind = "read-write lock"

// RWLock is a distributed read-write lock on one name. It is cheap to create and safe for concurrent
// use; two RWLock values with the same name on the same Client are the same lock.
type RWLock struct {
	read, write Lock
}

// Option configures an RWLock.
type Option func(*options)

type options struct {
	core.LockOptions
	preferWrite bool
}

// WithWriterPreference makes a waiting writer keep new readers out: readers already inside may finish
// and re-enter, and the writer gets in once they are gone. Without it a stream of overlapping readers
// can keep a writer out for ever.
//
// A waiting writer announces itself in a sorted set "redisync_rwlock_writers:{N}" (not part of
// Redisson's layout: Java readers ignore it) and renews the announcement at each try; one that gives
// up withdraws it, and one that dies lets it lapse after twice the Client's recheck interval. Every
// RWLock value on the name should use this option, since only those that do honour it.
func WithWriterPreference() Option { return func(o *options) { o.preferWrite = true } }

// New returns the read-write lock called name.
func New(c *redisync.Client, name string, opts ...Option) (*RWLock, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cc := core.Of(c)
	if cc == nil {
		return nil, errs.Invalid(kind, name, "nil client")
	}
	// A reader that prefers writers lets announced ones go first; a writer announces itself for
	// twice the recheck interval, renewed at each try.
	read, write := o.LockOptions, o.LockOptions
	read.Values, write.Values = map[string]string{"policy": "0", "mode": layout.RWLock.Read}, map[string]string{"policy": "0", "mode": layout.RWLock.Write}
	if o.preferWrite {
		read.Values["policy"] = "1"
		recheck, _ := strconv.ParseInt(cc.Values.Recheck, 10, 64)
		write.Values["policy"] = strconv.FormatInt(2*recheck, 10)
	}
	rw := &RWLock{read: Lock{c: cc}, write: Lock{c: cc, writer: true}}
	if err := rw.read.l.Init(cc, readSpec, name, read); err != nil {
		return nil, err
	}
	if err := rw.write.l.Init(cc, writeSpec, name, write); err != nil {
		return nil, err
	}
	return rw, nil
}

// Name returns the lock's name, which is also its key in Redis.
func (rw *RWLock) Name() string { return rw.read.l.Name() }

// ReadLock returns the shared side of the lock: many owners may hold it at once, while nobody holds
// the write lock (except themselves: see the package doc on downgrade).
func (rw *RWLock) ReadLock() *Lock { return &rw.read }

// WriteLock returns the exclusive side of the lock: one owner holds it, while nobody else reads.
func (rw *RWLock) WriteLock() *Lock { return &rw.write }
