package redisync

import "github.com/redisync/redisync/internal/errs"

// Errors returned by every primitive, wrapped with the object's kind and name; test them with
// errors.Is. Redis's own refusals come back as ErrWrongType, ErrNoPermission or ErrRefused, with a
// sentence that says what happened; Redis's message stays reachable with errors.As (a
// *rueidis.RedisError) for debugging. A dead server or a timeout comes back as the connection's
// error, wrapped the same way. No error is ever a successful acquisition.
var (
	// ErrNotHeld: the ctx's owner does not hold the object (it never did, released it already, or the
	// lease ended). Nothing was changed.
	ErrNotHeld = errs.ErrNotHeld
	// ErrNotAcquired: the wait bound passed (or a single try failed) without acquiring; for a latch's
	// TryAwait, without the count reaching zero.
	ErrNotAcquired = errs.ErrNotAcquired
	// ErrLost is the cause of a hold's ctx when the hold ended without Unlock: its fixed lease ran out,
	// the watchdog found it gone, or renewal kept failing until the lease may have ended.
	ErrLost = errs.ErrLost
	// ErrReleased is the cause of a hold's ctx after the matching Unlock.
	ErrReleased = errs.ErrReleased
	// ErrAlreadyHeld: a non-reentrant lock was locked again by its owner. The lock stays held.
	ErrAlreadyHeld = errs.ErrAlreadyHeld
	// ErrClosed: the Client was closed; it is also the cause of its holders' contexts.
	ErrClosed = errs.ErrClosed
	// ErrInvalidArgument: bad input (empty name, negative lease or wait, nil client); nothing was sent.
	ErrInvalidArgument = errs.ErrInvalidArgument
	// ErrNotReplicated: with WithReplicaAck, fewer replicas than required acknowledged an acquisition
	// within the timeout. The acquisition was given back; nothing is held. A renewal that is not
	// acknowledged does not extend the lease, so a hold whose renewals keep failing is lost.
	ErrNotReplicated = errs.ErrNotReplicated
	// ErrNotInnermost: Unlock of a hold that has holds taken inside it (through its ctx) still open.
	// Holds are released innermost first; nothing was changed.
	ErrNotInnermost = errs.ErrNotInnermost
	// ErrNotInitialized: the object needs a setting that nobody made yet (a rate limiter without a
	// rate: TrySetRate or SetRate first, also after its keep-alive let it expire). Nothing was changed.
	ErrNotInitialized = errs.ErrNotInitialized
	// ErrWrongType: the object's name (or one of the side keys it keeps beside the name) already
	// holds data that is not this primitive's: a key of another type, such as an application's
	// string, hash or list, or the layout of another primitive (a semaphore's count under a lock's
	// name, a group lock's fields in a lock's hash). Every method of every primitive refuses such a
	// name, reads included, and says what it found ("lock "stock": redisync: the name holds other
	// data: a string"): nothing is changed, deleted or waited for.
	ErrWrongType = errs.ErrWrongType
	// ErrNoPermission: Redis refused the user (NOPERM: the ACL does not allow a command or key the
	// call needs; NOAUTH, WRONGPASS). Nothing was changed.
	ErrNoPermission = errs.ErrNoPermission
	// ErrRefused: Redis refused the call for a reason of its own (out of memory, a read-only replica,
	// busy with a script, loading, unable to persist...), which the error says. A waiter that gets
	// it returns it at once. The refusals that mean the call did not run and may soon (TRYAGAIN while
	// a cluster slot moves, CLUSTERDOWN, LOADING, READONLY after a failover) are sent again within
	// the call's bound first: returned, they mean that it did not run.
	ErrRefused = errs.ErrRefused
)
