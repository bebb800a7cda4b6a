package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// HoldSpec identifies one owner's hold on an object and says how it is kept.
type HoldSpec struct {
	Kind, Name string // for errors: "lock", "orders"
	Key        string // the object's main key
	Field      string // the owner's field in it ("<clientID>:<ownerID>", or "...:write")
	// Lease > 0 is a fixed lease: no renewal, and the hold's ctx has the lease's end (less Drift) as
	// deadline.
	// Lease == 0 means the watchdog keeps the hold with Renew.
	Lease time.Duration
	Renew RenewSpec
}

// holdID names one owner's hold on one object: the object's main key and the owner's field.
type holdID struct{ key, field string }

// hold is this client's record of one owner's hold on one object: the contexts handed out for each
// acquisition not yet released (re-entry gives several) and the hold's watchdog entry.
type hold struct {
	c    *Client
	spec HoldSpec

	mu      sync.Mutex
	pending int                       // acquisitions in flight
	cancels []context.CancelCauseFunc // one per acquisition, the newest last
	entry   *entry                    // watchdog registration, nil when none
}

// AcquireHold acquires with c.Acquire and records the hold. ctx must carry the owner (EnsureOwner).
// The returned ctx carries the owner, ends with ErrReleased after the matching release, with ErrLost
// when the hold is lost (renewal finds it gone, or the fixed lease ends: its deadline), or with the
// parent's cause.
//
// The watchdog entry is registered before the first acquire is sent, so that no renewal can be missed
// between the acquisition and its registration; it only renews once an acquisition is confirmed.
func (c *Client) AcquireHold(ctx context.Context, spec HoldSpec, wait time.Duration, w Wait) (context.Context, error) {
	h, err := c.beginHold(spec)
	if err != nil {
		return nil, err
	}
	if w.Lease = spec.Lease; w.Lease == 0 {
		w.Lease = c.cfg.WatchdogTimeout
	}
	start, err := c.Acquire(ctx, wait, w)
	if err != nil {
		h.abort()
		return nil, err
	}
	return h.commit(ctx, start), nil
}

func (c *Client) beginHold(spec HoldSpec) (*hold, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	id := holdID{spec.Key, spec.Field}
	h := c.holds[id]
	if h == nil {
		h = &hold{c: c, spec: spec}
		c.holds[id] = h
	}
	h.mu.Lock()
	h.pending++
	if spec.Lease == 0 && h.entry == nil {
		h.entry = c.watchdog.add(spec.Renew, h.lost)
	}
	h.mu.Unlock()
	return h, nil
}

// abort undoes beginHold after a failed acquisition.
func (h *hold) abort() {
	h.mu.Lock()
	h.pending--
	h.mu.Unlock()
	h.forgetIfIdle()
}

// commit records a successful acquisition whose command was sent at start.
func (h *hold) commit(parent context.Context, start time.Time) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	h.mu.Lock()
	h.pending--
	if h.spec.Lease > 0 {
		var stop context.CancelFunc
		end := start.Add(h.spec.Lease - Drift(h.spec.Lease))
		ctx, stop = context.WithDeadlineCause(ctx, end, h.err(fmt.Errorf("%w: lease of %v ended", ErrLost, h.spec.Lease)))
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	h.cancels = append(h.cancels, cancel)
	if h.entry != nil {
		h.c.watchdog.confirm(h.entry, start)
	}
	h.mu.Unlock()
	return ctx
}

// ReleaseHold releases one acquisition of the hold (key, field) with send, which runs the release in
// Redis and returns how many acquisitions the owner still has there, or an error wrapping ErrNotHeld.
//
// When this is the owner's last acquisition, the renewal stops before send runs: a renewal must never
// outlive the release. If send fails for another reason the hold is left as it was, renewal included,
// so that the caller may try again.
func (c *Client) ReleaseHold(key, field string, send func() (remaining int64, err error)) error {
	c.mu.Lock()
	h := c.holds[holdID{key, field}]
	c.mu.Unlock()
	if h == nil {
		_, err := send()
		return err
	}
	h.mu.Lock()
	var stopped *entry
	if len(h.cancels) <= 1 && h.pending == 0 && h.entry != nil {
		stopped, h.entry = h.entry, nil
		c.watchdog.remove(stopped)
	}
	h.mu.Unlock()

	remaining, err := send()
	switch {
	case err == nil:
		h.mu.Lock()
		var done []context.CancelCauseFunc
		if remaining <= 0 {
			done, h.cancels = h.cancels, nil
		} else if n := len(h.cancels); n > 0 {
			done, h.cancels = h.cancels[n-1:], h.cancels[:n-1]
		}
		if remaining > 0 && h.entry == nil && h.spec.Lease == 0 {
			// Redis holds more than this client knew of (a re-entry it did not see): keep renewing.
			h.entry = c.watchdog.add(h.spec.Renew, h.lost)
			c.watchdog.confirm(h.entry, time.Now())
		}
		h.mu.Unlock()
		for _, cancel := range done {
			cancel(ErrReleased)
		}
		h.forgetIfIdle()
		return nil
	case isNotHeld(err):
		h.end(h.err(fmt.Errorf("%w: it was no longer held at release", ErrLost)))
		return err
	default:
		if stopped != nil {
			h.mu.Lock()
			if h.entry == nil {
				h.entry = stopped
				c.watchdog.readd(stopped)
			}
			h.mu.Unlock()
		}
		return err
	}
}

// LoseHolds ends every hold this client has on key with cause (after a forced unlock, say).
func (c *Client) LoseHolds(key string, cause error) {
	c.mu.Lock()
	var all []*hold
	for id, h := range c.holds { // rare (a forced unlock): a scan beats a second index
		if id.key == key {
			all = append(all, h)
		}
	}
	c.mu.Unlock()
	for _, h := range all {
		h.end(h.err(cause))
	}
}

// lost is the watchdog's report that the hold is gone.
func (h *hold) lost(cause error) { h.end(h.err(cause)) }

// end cancels every acquisition's ctx with cause and stops the renewal.
func (h *hold) end(cause error) {
	h.mu.Lock()
	cancels := h.cancels
	h.cancels = nil
	if h.entry != nil {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
	h.mu.Unlock()
	for _, cancel := range cancels {
		cancel(cause)
	}
	h.forgetIfIdle()
}

// forgetIfIdle drops the record once nothing is held or in flight.
func (h *hold) forgetIfIdle() {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending > 0 || len(h.cancels) > 0 {
		return
	}
	if h.entry != nil {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
	if id := (holdID{h.spec.Key, h.spec.Field}); h.c.holds[id] == h {
		delete(h.c.holds, id)
	}
}

func (h *hold) err(err error) error { return Errorf(h.spec.Kind, h.spec.Name, err) }

func isNotHeld(err error) bool { return errors.Is(err, ErrNotHeld) }
