package waiting

import (
	"errors"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
)

// measure measures one acquisition while events are observed: from the call to its end, whether
// it waited, and whether a hand-over was taken. A nil *measure measures nothing.
type measure struct {
	ev         *hold.Events
	kind, name string
	start      time.Time
	grants     *claimWatch
	waited     bool // written and read on the acquiring goroutine only
}

// Observe starts measuring an acquisition of the object kind calls name, about to wait with w; it
// wraps w's hand-overs to learn whether one was taken. It returns nil, and costs nothing, when
// nobody observes.
func (c *Waiter) Observe(kind, name string, w *Wait) *measure {
	if !c.ev.Observed() {
		return nil
	}
	m := &measure{ev: c.ev, kind: kind, name: name, start: time.Now()}
	if w.Grants != nil {
		m.grants = &claimWatch{Grants: w.Grants}
		w.Grants = m.grants
	}
	return m
}

// waiting reports that the acquisition's first try failed and it waits for another.
func (m *measure) waiting() {
	if m != nil && !m.waited {
		m.waited = true
		m.ev.Emit(hold.Event{Kind: hold.EventWaiting, Primitive: m.kind, Name: m.name})
	}
}

// Done reports the end of the acquisition, with err as it ended: EventAcquired, EventNotAcquired,
// or EventFailed.
func (m *measure) Done(err error) {
	if m == nil {
		return
	}
	e := hold.Event{Primitive: m.kind, Name: m.name, Wait: time.Since(m.start), Waited: m.waited}
	switch {
	case err == nil:
		e.Kind, e.HandedOver = hold.EventAcquired, m.grants != nil && m.grants.claimed
	case errors.Is(err, errs.ErrNotAcquired):
		e.Kind = hold.EventNotAcquired
	default:
		e.Kind, e.Cause = hold.EventFailed, err
	}
	m.ev.Emit(e)
}

// claimWatch notes whether Acquire took a hand-over: it returns at once when Claim succeeds.
type claimWatch struct {
	Grants
	claimed bool // written and read on the acquiring goroutine only
}

func (g *claimWatch) Claim(token, score int64) bool {
	ok := g.Grants.Claim(token, score)
	g.claimed = g.claimed || ok
	return ok
}
