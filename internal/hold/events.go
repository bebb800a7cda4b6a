package hold

import (
	"errors"
	"log/slog"
	"time"

	"github.com/redisync/redisync/internal/errs"
)

// The kinds of event, in the order of package redisync's EventKind values (1, 2, ...).
const (
	Acquired      = iota + 1 // an acquisition ended acquired: wait, handedOver, waited
	Released                 // an acquisition was released by Unlock: held, ended
	Lost                     // a hold ended without Unlock: held, cause, ended
	RenewalFailed            // a renewal round failed; the hold lives on until its lease may end: cause
	Reconnected              // the notifier subscribed again after losing its subscriptions: channels
	Abandoned                // a held ctx was dropped without Unlock: held, ended
	Waiting                  // an acquisition's try failed and it waits for another
	NotAcquired              // an acquisition gave up at its wait bound: wait, waited
	Failed                   // an acquisition ended with an error: wait, waited, cause
	CountedDown              // a countdown latch was counted down
)

// Event is one thing a Client reports to Events.Func, field by field: package redisync's Event
// (whose fields these are) is the public face. Passed by value, it allocates nothing.
type Event struct {
	Kind               uint8
	Primitive, Name    string // "" for Reconnected
	Wait, Held         time.Duration
	HandedOver, Waited bool
	Cause              error
	Channels, Ended    int
}

// Events is where a Client reports what happens to its holds and acquisitions.
type Events struct {
	// Func, when set, receives every event, on the goroutine where it happens, as the fields of
	// package redisync's Event in order, kind being its EventKind.
	Func func(kind uint8, primitive, name string, wait, held time.Duration, handedOver, waited bool, cause error, channels, ended int)
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
		f(e.Kind, e.Primitive, e.Name, e.Wait, e.Held, e.HandedOver, e.Waited, e.Cause, e.Channels, e.Ended)
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
		h.c.ev.Emit(Event{Kind: Released, Primitive: h.kind, Name: h.name, Held: since(a.at), Ended: 1})
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
		h.c.ev.Emit(Event{Kind: Lost, Primitive: h.kind, Name: h.name, Held: since(all[0].at), Cause: cause, Ended: len(all)})
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
		h.c.ev.Emit(Event{Kind: Abandoned, Primitive: h.kind, Name: h.name, Held: since(a.at), Ended: n})
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
			events = append(events, Event{Kind: RenewalFailed, Primitive: h.kind, Name: h.name, Cause: err})
		}
		h.mu.Unlock()
	}
	c.mu.Unlock()
	for _, e := range events {
		c.ev.Emit(e)
	}
}
