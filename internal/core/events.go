package core

import (
	"errors"
	"fmt"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of Event.
const (
	EventAcquired      EventKind = iota + 1 // a hold was acquired: Wait, HandedOver
	EventReleased                           // an acquisition was released by Unlock: Held
	EventLost                               // a hold ended without Unlock: Held, Cause
	EventRenewalFailed                      // a renewal round failed; the hold lives on until its lease may end: Cause
	EventReconnected                        // the notifier subscribed again after losing its connection: Channels
	EventAbandoned                          // a held ctx was dropped without Unlock: Held
)

var kindNames = [...]string{"", "acquired", "released", "lost", "renewal failed", "reconnected", "abandoned"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one thing a Client reports to Config.Events. It is passed by value: reporting allocates
// nothing.
type Event struct {
	Kind      EventKind
	Primitive string // "lock", "fair lock", "read lock", "write lock", ...; "" for EventReconnected
	Name      string // the object's name; "" for EventReconnected
	// Wait is how long the acquisition took, from the call to the acquisition (EventAcquired).
	Wait time.Duration
	// Held is how long the acquisition was held (EventReleased, EventAbandoned), or for how long the
	// earliest acquisition of the hold had been (EventLost).
	Held time.Duration
	// HandedOver: the releasing holder handed the object to this waiter; otherwise it took it by
	// its own try (EventAcquired).
	HandedOver bool
	// Cause is why the hold was lost or the renewal failed (EventLost, EventRenewalFailed); it
	// matches ErrClosed when Close ended the hold.
	Cause error
	// Channels is how many channels were subscribed again (EventReconnected).
	Channels int
}

// epoch is what acquisition times are measured from: a monotonic reading in 8 bytes.
var epoch = time.Now()

func since(at time.Duration) time.Duration { return time.Since(epoch) - at }

// observed reports whether anyone receives events.
func (c *Client) observed() bool { return c.cfg.Events != nil }

func (c *Client) emit(e Event) {
	if f := c.cfg.Events; f != nil {
		f(e)
	}
}

// acquiring is what a lock's acquisition measures of one acquisition while events are observed.
type acquiring struct {
	start  time.Time
	grants *claimWatch
}

// observeAcquire starts measuring an acquisition about to wait with w; it wraps w's hand-overs to
// learn whether one was taken. It costs nothing when nobody observes.
func (c *Client) observeAcquire(w *Wait) acquiring {
	if !c.observed() {
		return acquiring{}
	}
	m := acquiring{start: time.Now()}
	if w.Grants != nil {
		m.grants = &claimWatch{Grants: w.Grants}
		w.Grants = m.grants
	}
	return m
}

// acquired reports the acquisition measured by m.
func (c *Client) acquired(m acquiring, kind, name string) {
	if m.start.IsZero() {
		return
	}
	c.emit(Event{Kind: EventAcquired, Primitive: kind, Name: name, Wait: time.Since(m.start),
		HandedOver: m.grants != nil && m.grants.claimed})
}

// claimWatch notes whether Acquire took a hand-over: it returns at once when Claim succeeds.
type claimWatch struct {
	Grants
	claimed bool // written and read on the acquiring goroutine only
}

func (g *claimWatch) Claim(payload string) bool {
	ok := g.Grants.Claim(payload)
	g.claimed = g.claimed || ok
	return ok
}

// stamp records when a was acquired, for the hold time of its events.
func (h *hold) stamp(a *acq) {
	if h.c.observed() {
		a.at = time.Since(epoch)
	}
}

// released reports that Unlock released a.
func (h *hold) released(a *acq) {
	if h.c.observed() {
		h.c.emit(Event{Kind: EventReleased, Primitive: h.kind, Name: h.name, Held: since(a.at)})
	}
}

// ended reports that the acquisitions in all, the earliest first, ended with cause without Unlock.
func (h *hold) ended(all []*acq, cause error) {
	if len(all) == 0 {
		return
	}
	if !errors.Is(cause, ErrClosed) {
		h.c.cfg.logger().Warn("redisync: hold lost", "kind", h.kind, "name", h.name, "owner", h.id.field, "cause", cause)
	}
	if h.c.observed() {
		h.c.emit(Event{Kind: EventLost, Primitive: h.kind, Name: h.name, Held: since(all[0].at), Cause: cause})
	}
}

// abandonedEvent reports that a's ctx was dropped without Unlock.
func (h *hold) abandonedEvent(a *acq) {
	if h.c.observed() {
		h.c.emit(Event{Kind: EventAbandoned, Primitive: h.kind, Name: h.name, Held: since(a.at)})
	}
}

// renewalFailed is the watchdog's report that a round failed to renew batch: the holds live on, and
// are lost if no later round renews them before their leases may end. It is logged once per batch.
func (c *Client) renewalFailed(batch []*entry, err error) {
	c.cfg.logger().Warn("redisync: lease renewal failed; the holds are lost unless a later renewal succeeds before their leases may end",
		"holds", len(batch), "error", err)
	if !c.observed() {
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
		c.emit(e)
	}
}

// reconnected is the notifier's report that it subscribed channels again after losing its
// connection; their waiters try again, since releases may have been missed meanwhile.
func (c *Client) reconnected(channels int) {
	c.cfg.logger().Info("redisync: notifier subscribed again after losing its connection; waiters try again",
		"channels", channels)
	c.emit(Event{Kind: EventReconnected, Channels: channels})
}
