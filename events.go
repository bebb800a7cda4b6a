package redisync

import "github.com/redisync/redisync/internal/hold"

// EventKind says what an Event reports.
type EventKind = hold.EventKind

// The kinds of Event.
const (
	// EventAcquired: an acquisition succeeded: of a lock (re-entries included), of semaphore
	// permits, of a rate limiter's permits, or an await of a countdown latch that found it open.
	// Wait is how long the call took; HandedOver tells whether the releasing holder handed the
	// object over to this waiter rather than it taking the object by its own try; Waited tells
	// whether it reported EventWaiting first.
	EventAcquired = hold.EventAcquired
	// EventReleased: Unlock released an acquisition of a lock. Held is how long it was held; Ended
	// is 1.
	EventReleased = hold.EventReleased
	// EventLost: a hold ended without Unlock, every acquisition of it at once. Cause says why: the
	// watchdog found it gone or could not renew it before its lease may have ended, Unlock found it
	// no longer held (a fixed lease that ended is reported so, when its Unlock comes), a forced
	// unlock, or Close (Cause matches ErrClosed). Held is counted from its earliest acquisition;
	// Ended is how many acquisitions it ends.
	EventLost = hold.EventLost
	// EventRenewalFailed: the watchdog could not renew a hold this round (the server is unreachable
	// or stalled). The hold lives on: a later round may renew it in time, or EventLost follows when
	// its lease may have ended. Cause is the error.
	EventRenewalFailed = hold.EventRenewalFailed
	// EventReconnected: the notifier lost its subscriptions while waiters waited (its Pub/Sub
	// connection dropped, or they had to move: a cluster slot moved, a master failed over) and has
	// subscribed again (Channels: how many channels); the waiters try again, since releases may have
	// been missed meanwhile. Primitive and Name are empty.
	EventReconnected = hold.EventReconnected
	// EventAbandoned: the ctx of an acquisition became unreachable without Unlock (see WithLogger).
	// Held is how long it was held. Ended is 1, or 0 when it was the hold's last acquisition, which
	// stays until its lease may have ended and is then ended by EventLost.
	EventAbandoned = hold.EventAbandoned
	// EventWaiting: an acquisition (of any primitive's, as for EventAcquired) tried, found the
	// object taken, and waits to try again. EventAcquired, EventNotAcquired or EventFailed ends
	// it, with Waited set: between the two the acquisition is a waiter.
	EventWaiting = hold.EventWaiting
	// EventNotAcquired: an acquisition with a wait bound (TryLock, TryAcquire, TryAwait) gave up
	// at it; with a bound of 0, its single try was refused. Wait is how long the call took.
	EventNotAcquired = hold.EventNotAcquired
	// EventFailed: an acquisition ended with an error, its Cause: Redis's (NOPERM, WRONGTYPE...),
	// the connection's, ctx's, or ErrClosed. Wait is how long the call took.
	EventFailed = hold.EventFailed
	// EventCountedDown: CountDown counted a countdown latch down (a latch at zero stays there).
	EventCountedDown = hold.EventCountedDown
)

// Event is one thing that happened to an object of a Client, as WithEvents reports it: a struct
// whose fields are set as its Kind says (see each EventKind), the others being zero:
//
//   - Kind: what happened.
//   - Primitive, Name: the kind of object ("lock", "spin lock", "fair lock", "read lock", "write
//     lock", "semaphore", "expirable semaphore", "rate limiter", "countdown latch": the words of
//     its errors) and its name.
//   - Wait (time.Duration): how long an acquiring call took.
//   - Held (time.Duration): how long an acquisition was held.
//   - HandedOver (bool): the releasing holder handed the object over to the acquisition.
//   - Cause (error): why a hold ended, a renewal or an acquisition failed.
//   - Channels (int): how many channels the notifier subscribed again.
//   - Waited (bool): the acquisition reported EventWaiting first.
//   - Ended (int): how many acquisitions of a hold it ends.
type Event = hold.Event

// WithEvents makes the Client call f with every Event: acquisitions, releases and losses of the
// holds of rlock, spinlock, fairlock and rwlock (and so of the MultiLocks built of them), failed
// renewals, notifier reconnects, and the acquisitions of semaphore permits and rate limiter
// permits, the awaits and count-downs of countdown latches, with their waits, refusals and
// failures. Releases of permits are not reported: a permit is not a hold of the Client's.
//
// f runs synchronously on the library's goroutines: the one that called Lock or Unlock, the
// watchdog's, the notifier's, or the garbage collector's cleanup goroutine. It must be quick and
// must not block, nor call back into the Client; a metrics counter or a non-blocking send is right.
// f may be called concurrently. Without WithEvents nothing is measured and nothing is allocated.
func WithEvents(f func(Event)) Option { return func(c *options) { c.Events = f } }
