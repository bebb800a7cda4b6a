package core

import (
	"errors"
	"fmt"
	"time"
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

// CountedDown reports that the countdown latch name was counted down.
func (c *Client) CountedDown(kind, name string) {
	c.emit(Event{Kind: EventCountedDown, Primitive: kind, Name: name})
}

// acquiring measures one acquisition while events are observed: from the call to its end, whether
// it waited, and whether a hand-over was taken. A nil *acquiring measures nothing.
type acquiring struct {
	c          *Client
	kind, name string
	start      time.Time
	grants     *claimWatch
	waited     bool // written and read on the acquiring goroutine only
}

// observe starts measuring an acquisition of the object kind calls name, about to wait with w; it
// wraps w's hand-overs to learn whether one was taken. It returns nil, and costs nothing, when
// nobody observes.
func (c *Client) observe(kind, name string, w *Wait) *acquiring {
	if !c.observed() {
		return nil
	}
	m := &acquiring{c: c, kind: kind, name: name, start: time.Now()}
	if w.Grants != nil {
		m.grants = &claimWatch{Grants: w.Grants}
		w.Grants = m.grants
	}
	return m
}

// waiting reports that the acquisition's first try failed and it waits for another.
func (m *acquiring) waiting() {
	if m != nil && !m.waited {
		m.waited = true
		m.c.emit(Event{Kind: EventWaiting, Primitive: m.kind, Name: m.name})
	}
}

// done reports the end of the acquisition, with err as it ended: EventAcquired, EventNotAcquired,
// or EventFailed.
func (m *acquiring) done(err error) {
	if m == nil {
		return
	}
	e := Event{Primitive: m.kind, Name: m.name, Wait: time.Since(m.start), Waited: m.waited}
	switch {
	case err == nil:
		e.Kind, e.HandedOver = EventAcquired, m.grants != nil && m.grants.claimed
	case errors.Is(err, ErrNotAcquired):
		e.Kind = EventNotAcquired
	default:
		e.Kind, e.Cause = EventFailed, err
	}
	m.c.emit(e)
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
		h.c.emit(Event{Kind: EventReleased, Primitive: h.kind, Name: h.name, Held: since(a.at), Ended: 1})
	}
}

// ended reports that the acquisitions in all, the earliest first, ended with cause without Unlock.
func (h *hold) ended(all []*acq, cause error) {
	if len(all) == 0 {
		return
	}
	if !errors.Is(cause, ErrClosed) {
		h.c.cfg.logger().Warn("redisync: hold lost", "kind", h.kind, "name", h.name, "owner", h.field, "cause", cause)
	}
	if h.c.observed() {
		h.c.emit(Event{Kind: EventLost, Primitive: h.kind, Name: h.name, Held: since(all[0].at), Cause: cause, Ended: len(all)})
	}
}

// abandonedEvent reports that a's ctx was dropped without Unlock; kept, it stays held until
// EventLost ends it.
func (h *hold) abandonedEvent(a *acq, kept bool) {
	if h.c.observed() {
		n := 1
		if kept {
			n = 0
		}
		h.c.emit(Event{Kind: EventAbandoned, Primitive: h.kind, Name: h.name, Held: since(a.at), Ended: n})
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

// reconnected is the notifier's report that it subscribed channels again after losing their
// subscription (its connection dropped, or they moved with a slot or a failover); their waiters try
// again, since releases may have been missed meanwhile, and the holds are checked, since the server
// may have lost them (a Client of Wrap hears of no other reconnect).
func (c *Client) reconnected(channels int) {
	c.watchdog.check()
	c.cfg.logger().Info("redisync: notifier subscribed again after losing its subscriptions; waiters try again",
		"channels", channels)
	c.emit(Event{Kind: EventReconnected, Channels: channels})
}
