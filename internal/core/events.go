package core

import (
	"errors"
	"time"

	"github.com/redisync/redisync/internal/errs"
)

// The kinds of event, in the order of package redisync's EventKind values (1, 2, ...).
const (
	evAcquired      = iota + 1 // an acquisition ended acquired: wait, handedOver, waited
	evReleased                 // an acquisition was released by Unlock: held, ended
	evLost                     // a hold ended without Unlock: held, cause, ended
	evRenewalFailed            // a renewal round failed; the hold lives on until its lease may end: cause
	evReconnected              // the notifier subscribed again after losing its subscriptions: channels
	evAbandoned                // a held ctx was dropped without Unlock: held, ended
	evWaiting                  // an acquisition's try failed and it waits for another
	evNotAcquired              // an acquisition gave up at its wait bound: wait, waited
	evFailed                   // an acquisition ended with an error: wait, waited, cause
	evCountedDown              // a countdown latch was counted down
)

// event is one thing a Client reports to Config.Events, field by field: package redisync's Event
// (whose fields these are) is the public face. Passed by value, it allocates nothing.
type event struct {
	kind               uint8
	primitive, name    string // "" for evReconnected
	wait, held         time.Duration
	handedOver, waited bool
	cause              error
	channels, ended    int
}

// epoch is what acquisition times are measured from: a monotonic reading in 8 bytes.
var epoch = time.Now()

func since(at time.Duration) time.Duration { return time.Since(epoch) - at }

// observed reports whether anyone receives events.
func (c *Client) observed() bool { return c.cfg.Events != nil }

func (c *Client) emit(e event) {
	if f := c.cfg.Events; f != nil {
		f(e.kind, e.primitive, e.name, e.wait, e.held, e.handedOver, e.waited, e.cause, e.channels, e.ended)
	}
}

// CountedDown reports that the countdown latch name was counted down.
func (c *Client) CountedDown(kind, name string) {
	c.emit(event{kind: evCountedDown, primitive: kind, name: name})
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
		m.c.emit(event{kind: evWaiting, primitive: m.kind, name: m.name})
	}
}

// done reports the end of the acquisition, with err as it ended: EventAcquired, EventNotAcquired,
// or EventFailed.
func (m *acquiring) done(err error) {
	if m == nil {
		return
	}
	e := event{primitive: m.kind, name: m.name, wait: time.Since(m.start), waited: m.waited}
	switch {
	case err == nil:
		e.kind, e.handedOver = evAcquired, m.grants != nil && m.grants.claimed
	case errors.Is(err, errs.ErrNotAcquired):
		e.kind = evNotAcquired
	default:
		e.kind, e.cause = evFailed, err
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
		h.c.emit(event{kind: evReleased, primitive: h.kind, name: h.name, held: since(a.at), ended: 1})
	}
}

// ended reports that the acquisitions in all, the earliest first, ended with cause without Unlock.
func (h *hold) ended(all []*acq, cause error) {
	if len(all) == 0 {
		return
	}
	if !errors.Is(cause, errs.ErrClosed) {
		h.c.cfg.logger().Warn("redisync: hold lost", "kind", h.kind, "name", h.name, "owner", h.field, "cause", cause)
	}
	if h.c.observed() {
		h.c.emit(event{kind: evLost, primitive: h.kind, name: h.name, held: since(all[0].at), cause: cause, ended: len(all)})
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
		h.c.emit(event{kind: evAbandoned, primitive: h.kind, name: h.name, held: since(a.at), ended: n})
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
	var events []event
	c.mu.Lock()
	for _, h := range c.holds { // rare: a failed round; a scan beats an index kept for it
		h.mu.Lock()
		if h.entry != nil && failed[h.entry] {
			events = append(events, event{kind: evRenewalFailed, primitive: h.kind, name: h.name, cause: err})
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
	c.emit(event{kind: evReconnected, channels: channels})
}
