package hold

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redisync/redisync/internal/errs"
)

// EventKind says what an Event reports (package redisync documents each kind).
type EventKind uint8

// The kinds of Event, and the fields each sets beside Primitive and Name.
const (
	EventAcquired      EventKind = iota + 1 // an acquisition ended acquired: Wait, HandedOver, Waited
	EventReleased                           // an acquisition was released by Unlock: Held, Ended
	EventLost                               // a hold ended without Unlock: Held, Cause, Ended
	EventRenewalFailed                      // a renewal round failed; the hold lives on until its lease may end: Cause
	EventReconnected                        // the notifier subscribed again after losing its subscriptions: Channels only
	EventAbandoned                          // a held ctx was dropped without Unlock: Held, Ended
	EventWaiting                            // an acquisition's try failed and it waits for another
	EventNotAcquired                        // an acquisition gave up at its wait bound: Wait, Waited
	EventFailed                             // an acquisition ended with an error: Wait, Waited, Cause
	EventCountedDown                        // a countdown latch was counted down
)

var kindNames = [...]string{"", "acquired", "released", "lost", "renewal failed", "reconnected", "abandoned",
	"waiting", "not acquired", "failed", "counted down"}

// String returns the kind in words: "acquired", "released", ...
func (k EventKind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one thing that happened to an object of a Client, as Config.Events receives it and
// package redisync hands it out (its Event is this type). Only the fields its Kind names are set.
// Passed by value, it allocates nothing.
type Event struct {
	Kind            EventKind
	Primitive, Name string        // the object's kind (its errors' words) and name; "" for EventReconnected
	Wait            time.Duration // from the acquiring call to its end
	Held            time.Duration // from the (earliest) acquisition to its end
	HandedOver      bool          // the releasing holder handed the object over to this waiter
	Cause           error         // why a hold ended, a renewal or an acquisition failed
	Channels        int           // the channels subscribed again
	Waited          bool          // EventWaiting came first
	Ended           int           // the acquisitions it ends
}

// Events is where a Client reports what happens to its holds and acquisitions.
type Events struct {
	// Func, when set, receives every event, on the goroutine where it happens.
	Func func(Event)
	// Logger receives what would otherwise pass silently; nil means slog.Default().
	Logger *slog.Logger
}

// Log returns the logger.
func (ev *Events) Log() *slog.Logger {
	if ev.Logger != nil {
		return ev.Logger
	}
	return slog.Default()
}

// Observed reports whether anyone receives events.
func (ev *Events) Observed() bool { return ev.Func != nil }

// Emit reports e.
func (ev *Events) Emit(e Event) {
	if f := ev.Func; f != nil {
		f(e)
	}
}

// epoch is what acquisition times are measured from: a monotonic reading in 8 bytes.
var epoch = time.Now()

func since(at time.Duration) time.Duration { return time.Since(epoch) - at }

// stamp records when a was acquired, for the hold time of its events.
func (h *hold) stamp(a *Acq) {
	if h.c.ev.Observed() {
		a.at = time.Since(epoch)
	}
}

// released reports that Unlock released a.
func (h *hold) released(a *Acq) {
	if h.c.ev.Observed() {
		h.c.ev.Emit(Event{Kind: EventReleased, Primitive: h.kind, Name: h.name, Held: since(a.at), Ended: 1})
	}
}

// ended reports that the acquisitions in all, the earliest first, ended with cause without Unlock.
func (h *hold) ended(all []*Acq, cause error) {
	if len(all) == 0 {
		return
	}
	if !errors.Is(cause, errs.ErrClosed) {
		h.c.ev.Log().Warn("redisync: hold lost", "kind", h.kind, "name", h.name, "owner", h.field, "cause", cause)
	}
	if h.c.ev.Observed() {
		h.c.ev.Emit(Event{Kind: EventLost, Primitive: h.kind, Name: h.name, Held: since(all[0].at), Cause: cause, Ended: len(all)})
	}
}

// abandonedEvent reports that a's ctx was dropped without Unlock; kept, it stays held until
// EventLost ends it.
func (h *hold) abandonedEvent(a *Acq, kept bool) {
	if h.c.ev.Observed() {
		n := 1
		if kept {
			n = 0
		}
		h.c.ev.Emit(Event{Kind: EventAbandoned, Primitive: h.kind, Name: h.name, Held: since(a.at), Ended: n})
	}
}

// renewalFailed is the watchdog's report that a round failed to renew batch: the holds live on, and
// are lost if no later round renews them before their leases may end. It is logged once per batch.
func (c *Holds) renewalFailed(batch []*entry, err error) {
	c.ev.Log().Warn("redisync: lease renewal failed; the holds are lost unless a later renewal succeeds before their leases may end",
		"holds", len(batch), "error", err)
	if !c.ev.Observed() {
		return
	}
	failed := make(map[*entry]bool, len(batch))
	for _, e := range batch {
		failed[e] = true
	}
	var events []Event
	c.mu.Lock()
	for _, h := range c.holds { // rare: a failed round; a scan beats an index kept for it
		h.mu.Lock()
		if h.entry != nil && failed[h.entry] {
			events = append(events, Event{Kind: EventRenewalFailed, Primitive: h.kind, Name: h.name, Cause: err})
		}
		h.mu.Unlock()
	}
	c.mu.Unlock()
	for _, e := range events {
		c.ev.Emit(e)
	}
}
