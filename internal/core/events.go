package core

import (
	"errors"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
)

// CountedDown reports that the countdown latch name was counted down.
func (c *Client) CountedDown(kind, name string) {
	c.ev.Emit(hold.Event{Kind: hold.CountedDown, Primitive: kind, Name: name})
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
	if !c.ev.Observed() {
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
		m.c.ev.Emit(hold.Event{Kind: hold.Waiting, Primitive: m.kind, Name: m.name})
	}
}

// done reports the end of the acquisition, with err as it ended: EventAcquired, EventNotAcquired,
// or EventFailed.
func (m *acquiring) done(err error) {
	if m == nil {
		return
	}
	e := hold.Event{Primitive: m.kind, Name: m.name, Wait: time.Since(m.start), Waited: m.waited}
	switch {
	case err == nil:
		e.Kind, e.HandedOver = hold.Acquired, m.grants != nil && m.grants.claimed
	case errors.Is(err, errs.ErrNotAcquired):
		e.Kind = hold.NotAcquired
	default:
		e.Kind, e.Cause = hold.Failed, err
	}
	m.c.ev.Emit(e)
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

// reconnected is the notifier's report that it subscribed channels again after losing their
// subscription (its connection dropped, or they moved with a slot or a failover); their waiters try
// again, since releases may have been missed meanwhile, and the holds are checked, since the server
// may have lost them (a Client of Wrap hears of no other reconnect).
func (c *Client) reconnected(channels int) {
	c.holds.Check()
	c.ev.Log().Info("redisync: notifier subscribed again after losing its subscriptions; waiters try again",
		"channels", channels)
	c.ev.Emit(hold.Event{Kind: hold.Reconnected, Channels: channels})
}
