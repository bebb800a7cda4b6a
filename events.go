package redisync

import (
	"time"

	"github.com/redisync/redisync/internal/core"
)

// EventKind says what an Event reports.
type EventKind = core.EventKind

// The kinds of Event.
const (
	// EventAcquired: an acquisition of a lock succeeded, re-entries included. Wait is how long the
	// call took; HandedOver tells whether the releasing holder handed the lock over to this waiter
	// rather than it taking the lock by its own try.
	EventAcquired = core.EventAcquired
	// EventReleased: Unlock released an acquisition. Held is how long it was held.
	EventReleased = core.EventReleased
	// EventLost: a hold ended without Unlock, every acquisition of it at once. Cause says why: the
	// watchdog found it gone or could not renew it before its lease may have ended, Unlock found it
	// no longer held (a fixed lease that ended is reported so, when its Unlock comes), a forced
	// unlock, or Close (Cause matches ErrClosed). Held is counted from its earliest acquisition.
	EventLost = core.EventLost
	// EventRenewalFailed: the watchdog could not renew a hold this round (the server is unreachable
	// or stalled). The hold lives on: a later round may renew it in time, or EventLost follows when
	// its lease may have ended. Cause is the error.
	EventRenewalFailed = core.EventRenewalFailed
	// EventReconnected: the notifier lost its Pub/Sub connection while waiters waited and has
	// subscribed again (Channels: how many channels); the waiters try again, since releases may have
	// been missed meanwhile. Primitive and Name are empty.
	EventReconnected = core.EventReconnected
	// EventAbandoned: the ctx of an acquisition became unreachable without Unlock (see WithLogger).
	// Held is how long it was held.
	EventAbandoned = core.EventAbandoned
)

// Event is one thing that happened to a lock of a Client, as WithEvents reports it. Only the fields
// its Kind names are set.
type Event struct {
	Kind EventKind
	// Primitive is the kind of object: "lock", "fair lock", "read lock", "write lock" (the words of
	// its errors). Name is its name.
	Primitive, Name string
	Wait            time.Duration // EventAcquired
	Held            time.Duration // EventReleased, EventLost, EventAbandoned
	HandedOver      bool          // EventAcquired
	Cause           error         // EventLost, EventRenewalFailed
	Channels        int           // EventReconnected
}

// WithEvents makes the Client call f with every Event: acquisitions, releases and losses of the
// holds of rlock, fairlock and rwlock (and so of the MultiLocks built of them), failed renewals,
// and notifier reconnects. Semaphore permits, latches and rate limiters report nothing.
//
// f runs synchronously on the library's goroutines: the one that called Lock or Unlock, the
// watchdog's, the notifier's, or the garbage collector's cleanup goroutine. It must be quick and
// must not block, nor call back into the Client; a metrics counter or a non-blocking send is right.
// f may be called concurrently. Without WithEvents nothing is measured and nothing is allocated.
func WithEvents(f func(Event)) Option {
	return func(c *options) {
		if f == nil {
			c.Events = nil
			return
		}
		c.Events = func(e core.Event) { f(Event(e)) }
	}
}
