// Package hold is the engine's middle layer: this client's record of what each owner holds (the
// stack of its acquisitions, one call of a hold on its way at a time), the ctx a hold hands out and
// how it ends (owner.go, follow.go), the watchdog that renews and checks holds (watchdog.go), and
// the connections whose end has them checked (conns.go). It sends through package send, and knows
// nothing of how a primitive waits or what its scripts are.
package hold

import (
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
	"sync"
	"time"
)

// Holds is one Client's record of its holds, and their watchdog.
type Holds struct {
	s        *send.Sender
	watchdog *watchdog
	ev       *Events
	mu       sync.Mutex
	holds    map[ID]*hold
	closed   bool
}

// New returns the Holds of the Client that sends with s and reports to ev; ttl is the watchdog
// timeout, and cluster says that renewals must be batched per slot.
func New(s *send.Sender, ev *Events, ttl time.Duration, cluster bool) *Holds {
	hs := &Holds{s: s, ev: ev, holds: make(map[ID]*hold)}
	hs.watchdog = newWatchdog(s.Resend, hs.renewalFailed, ttl, cluster)
	return hs
}

// Close stops the watchdog and ends every hold with errs.ErrClosed: they are not released, their
// renewal stops, so they expire within one watchdog timeout (or at the end of their fixed lease).
func (c *Holds) Close() {
	c.mu.Lock()
	c.closed = true
	all := make([]*hold, 0, len(c.holds))
	for _, h := range c.holds {
		all = append(all, h)
	}
	c.mu.Unlock()
	c.watchdog.close()
	for _, h := range all {
		h.end(errs.ErrClosed)
	}
}

// Pending returns how many holds are recorded and how many of them the watchdog renews: after the
// last release, and what finishes in the background after it, both are 0 (leak checks).
func (c *Holds) Pending() (holds, renewals int) {
	c.mu.Lock()
	holds = len(c.holds)
	c.mu.Unlock()
	return holds, c.watchdog.len()
}

// Check has every hold checked at once (see watchdog.check): a connection ended, or the notifier
// subscribed again, and the server may have lost them.
func (c *Holds) Check() { c.watchdog.check() }
