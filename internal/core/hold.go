package core

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// HoldSpec identifies one owner's hold on an object and says how one acquisition of it is kept.
type HoldSpec struct {
	Kind, Name string // for errors: "lock", "orders"
	Key        string // the object's main key
	Field      string // the owner's field in it ("<clientID>:<ownerID>", or "...:write")
	Owner      int64  // the owner whose field it is, when known (0): Unlock then needs no Field
	// Lease > 0 is a fixed lease: no renewal, and the acquisition's ctx has the lease's end (less
	// Drift) as deadline. Lease == 0 means the watchdog keeps the hold with Renew.
	Lease time.Duration
	Renew RenewSpec
	// Shared lets goroutines that share a held ctx hold at once and release in any order (read
	// holds). Otherwise only the ctx of the innermost acquisition may re-enter, and only it may be
	// released.
	Shared bool
}

// holdID names one owner's hold on one object: the object's main key and the owner's field.
type holdID struct{ key, field string }

// hold is this client's record of one owner's hold on one object: its acquisitions not yet released,
// the newest last, and the watchdog entry that renews it.
//
// Re-entry is exclusive: an acquisition goes ahead only when its ctx carries the innermost one (or,
// with nothing held, any ctx of the owner), and one at a time; the others wait here, without a
// command, for their turn. So recursion re-enters at once, while goroutines fanned out from one held
// ctx take turns instead of all being inside.
type hold struct {
	c      *Client
	id     holdID
	kind   string
	name   string
	shared bool
	renew  RenewSpec

	mu     sync.Mutex
	owner  int64   // HoldSpec.Owner
	stack  []*acq  // acquisitions held, the innermost last
	stack0 [2]*acq // stack's first array, in the same allocation
	busy   bool    // an exclusive acquisition is in flight
	// releases in flight: no acquisition is sent meanwhile, so that a release re-sent after a network
	// error never takes a new acquisition's hold for the one it released (rlock_release.lua)
	releasing int
	pending   int           // acquisitions in flight
	watched   int           // acquisitions held or in flight that the watchdog keeps
	entry     *entry        // watchdog registration, nil when none
	turn      chan struct{} // closed when the stack or busy change; nil when nobody waits
}

// acq is one acquisition of a hold: what its ctx carries and how it ends.
type acq struct {
	h         *hold
	cancel    context.CancelCauseFunc
	watched   bool // kept by the watchdog, not by a fixed lease
	releasing bool // an Unlock of it is in flight
	released  atomic.Bool
	at        time.Duration // when acquired, since epoch (only while events are observed)
}

// ownedIn finds, in ctx, the innermost acquisition of owner's hold of kind on key of c, by the owner
// the hold was acquired for (HoldSpec.Owner). The kind tells apart the fields one owner has in one
// key (a read-write lock's read and write holds).
func ownedIn(ctx context.Context, c *Client, kind, key string, owner int64) *acq {
	for {
		switch x := ctx.Value(holdsKey{}).(type) {
		case *heldCtx:
			if h := x.a.h; h.c == c && h.owner == owner && h.id.key == key && h.kind == kind {
				return x.a
			}
			ctx = x.Context
		case *holdsOf:
			if a := ownedIn(x.from, c, kind, key, owner); a != nil {
				return a
			}
			ctx = x.Context
		default:
			return nil
		}
	}
}

// holdsKey asks a ctx for the innermost heldCtx or holdsOf in its chain: a key of no size, which
// costs no allocation to ask with (a key naming the hold would be boxed on every lookup).
type holdsKey struct{}

// acqIn finds, in ctx, the innermost acquisition of c's hold id that the ctx came from.
func acqIn(ctx context.Context, c *Client, id holdID) *acq {
	for {
		switch x := ctx.Value(holdsKey{}).(type) {
		case *heldCtx:
			if x.a.h.c == c && x.a.h.id == id {
				return x.a
			}
			ctx = x.Context
		case *holdsOf:
			if a := acqIn(x.from, c, id); a != nil {
				return a
			}
			ctx = x.Context
		default:
			return nil
		}
	}
}

// heldCtx is the ctx an acquisition hands out: it carries the acquisition, and its being dropped
// without Unlock is how an abandoned hold is noticed.
type heldCtx struct {
	context.Context
	a *acq
}

func (x *heldCtx) Value(key any) any {
	if _, ok := key.(holdsKey); ok {
		return x
	}
	return x.Context.Value(key)
}

func (x *heldCtx) String() string { return fmt.Sprintf("%v.WithHold(%s)", x.Context, x.a.h.id.key) }

// AcquireHold acquires with c.Acquire and records the acquisition. ctx must carry the owner
// (EnsureOwner). The returned ctx carries the owner and the acquisition; it ends with ErrReleased
// after the matching release, with ErrLost when the hold is lost (renewal finds it gone, or the fixed
// lease ends: its deadline), or with the parent's cause.
//
// Before anything is sent the acquisition waits its turn in this process (see hold); that wait
// counts against wait. The watchdog entry is registered before the acquire is sent, so that no renewal
// can be missed between the acquisition and its registration; it only renews once an acquisition is
// confirmed.
func (c *Client) AcquireHold(ctx context.Context, spec HoldSpec, wait time.Duration, w Wait) (context.Context, error) {
	m := c.ObserveAcquire(spec.Kind, spec.Name, wait, &w)
	h, wait, err := c.enter(ctx, spec, wait)
	if err != nil {
		m.Done(err)
		return nil, err
	}
	if w.Lease = spec.Lease; w.Lease == 0 {
		w.Lease = c.cfg.WatchdogTimeout
	}
	start, err := c.Acquire(ctx, wait, w)
	if err != nil {
		h.abort(spec)
		m.Done(err)
		return nil, err
	}
	held := h.commit(ctx, spec, start)
	m.Done(nil)
	return held, nil
}

// enter waits until an acquisition through ctx may be sent (see hold) and books it; it returns the
// hold and what is left of wait.
func (c *Client) enter(ctx context.Context, spec HoldSpec, wait time.Duration) (*hold, time.Duration, error) {
	id := holdID{spec.Key, spec.Field}
	outer := acqIn(ctx, c, id)
	var deadline time.Time
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, 0, ErrClosed
		}
		h := c.holds[id]
		if h == nil {
			h = &hold{c: c, id: id, owner: spec.Owner, kind: spec.Kind, name: spec.Name, shared: spec.Shared, renew: spec.Renew}
			h.stack = h.stack0[:0]
			c.holds[id] = h
		}
		h.mu.Lock()
		c.mu.Unlock()
		if h.mayEnter(outer) {
			h.pending++
			h.busy = !h.shared
			if spec.Lease == 0 {
				h.watched++
				if h.entry == nil {
					h.entry = c.watchdog.add(spec.Renew, h)
				}
			}
			h.mu.Unlock()
			if !deadline.IsZero() {
				wait = max(time.Until(deadline), 0)
			}
			return h, wait, nil
		}
		if h.turn == nil {
			h.turn = make(chan struct{})
		}
		turn := h.turn
		h.mu.Unlock()
		if wait == 0 {
			return nil, 0, ErrNotAcquired
		}
		if wait > 0 && timeout == nil {
			deadline = time.Now().Add(wait)
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-turn:
		case <-timeout:
			return nil, 0, ErrNotAcquired
		case <-ctx.Done():
			return nil, 0, context.Cause(ctx)
		case <-c.done:
			return nil, 0, ErrClosed
		}
	}
}

// mayEnter reports whether an acquisition whose ctx carries outer (nil: none of this hold) may go
// ahead now. h.mu is held.
func (h *hold) mayEnter(outer *acq) bool {
	switch {
	case h.releasing > 0:
		return false
	case h.shared:
		return true
	case h.busy:
		return false
	case len(h.stack) == 0:
		return true
	}
	return outer != nil && h.stack[len(h.stack)-1] == outer
}

// changed wakes the acquisitions waiting for their turn. h.mu is held.
func (h *hold) changed() {
	if h.turn != nil {
		close(h.turn)
		h.turn = nil
	}
}

// abort undoes enter after a failed acquisition.
func (h *hold) abort(spec HoldSpec) {
	h.mu.Lock()
	h.pending--
	h.busy = false
	if spec.Lease == 0 {
		h.unwatch()
	}
	h.changed()
	h.mu.Unlock()
	h.forgetIfIdle()
}

// unwatch drops one acquisition kept by the watchdog, and the renewal with the last. h.mu is held.
func (h *hold) unwatch() {
	if h.watched--; h.watched == 0 && h.entry != nil {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
}

// commit records a successful acquisition whose command was sent at start.
func (h *hold) commit(parent context.Context, spec HoldSpec, start time.Time) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	if spec.Lease > 0 {
		var stop context.CancelFunc
		end := start.Add(spec.Lease - Drift(spec.Lease))
		ctx, stop = context.WithDeadlineCause(ctx, end, h.err(fmt.Errorf("%w: lease of %v ended", ErrLost, spec.Lease)))
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	a := &acq{h: h, cancel: cancel, watched: spec.Lease == 0}
	h.stamp(a)
	h.mu.Lock()
	h.pending--
	h.busy = false
	h.stack = append(h.stack, a)
	if a.watched {
		if h.entry == nil { // the hold was lost while this acquisition was in flight
			h.entry = h.c.watchdog.add(h.renew, h)
		}
		h.c.watchdog.confirm(h.entry, start)
	}
	h.changed()
	h.mu.Unlock()
	held := &heldCtx{ctx, a}
	runtime.AddCleanup(held, abandoned, a)
	return held
}

// ReleaseHold releases the acquisition that ctx carries of owner's hold on key with r, which runs
// the release in Redis and returns how many acquisitions the owner still has there, or an error
// wrapping ErrNotHeld. An exclusive hold is released innermost first: releasing one with others
// above it is ErrNotInnermost, and changes nothing.
//
// When this is the last acquisition the watchdog keeps, the renewal stops before send runs: a
// renewal must never outlive the release. If send fails for another reason the hold is left as it
// was, renewal included, so that the caller may try again.
func (c *Client) ReleaseHold(ctx context.Context, kind, key string, owner int64, r Releaser) error {
	var field string
	if a := ownedIn(ctx, c, kind, key, owner); a != nil {
		field = a.h.id.field // the field's string again costs nothing
	} else {
		field = r.Field(owner)
	}
	// ctx is usually a hold's ctx, which can end: detached at once, without asking for its Done channel.
	held := 0 // what the release can count on finding (see Releaser)
	send := func() (int64, error) { return r.Release(context.WithoutCancel(ctx), owner, field, held) }
	id := holdID{key, field}
	a := acqIn(ctx, c, id)
	c.mu.Lock()
	h := c.holds[id]
	c.mu.Unlock()
	if a != nil && a.released.Load() {
		return ErrNotHeld
	}
	if h == nil || (a != nil && a.h != h) {
		// A hold this client keeps no record of (its acquisition's reply was lost, say), or one that
		// was lost: Redis says what is left, and the release clears it.
		_, err := send()
		if errors.Is(err, ErrResentGone) {
			return ErrNotHeld
		}
		return err
	}
	if a == nil {
		return ErrNotHeld
	}
	h.mu.Lock()
	i := slices.Index(h.stack, a)
	switch {
	case a.releasing:
		h.mu.Unlock()
		return ErrNotHeld
	case i < 0: // lost while the record lives on for other acquisitions: theirs is not to release
		h.mu.Unlock()
		return ErrNotHeld
	case !h.shared && (i != len(h.stack)-1 || h.busy):
		h.mu.Unlock()
		return ErrNotInnermost
	}
	a.releasing = true
	h.releasing++
	if !h.shared {
		// Exclusive: releases go one at a time, innermost first, and no acquisition is sent
		// meanwhile, so Redis holds what the stack counts (unless acquisitions were abandoned, or
		// a reply was lost: the script sees that the count differs).
		held = len(h.stack)
	}
	var stopped *entry
	if a.watched && h.watched == 1 && h.entry != nil {
		stopped, h.entry = h.entry, nil
		c.watchdog.remove(stopped)
	}
	h.mu.Unlock()

	remaining, err := send()
	if errors.Is(err, ErrResentGone) {
		// This client counted the hold as held: the release's first send most likely released it
		// (a hold that lapsed before is reported by its renewal or its lease's end, which had not
		// happened).
		remaining, err = 0, nil
	}
	switch {
	case err == nil:
		a.released.Store(true)
		h.mu.Lock()
		h.releasing--
		h.changed()
		var rest []*acq
		h.drop(a)
		if remaining <= 0 {
			// Redis holds nothing more for the owner: whatever else this client counted is gone.
			rest = h.takeAll()
		}
		h.mu.Unlock()
		h.forgetIfIdle() // first: when a ctx ends, the client's record already says so
		a.cancel(ErrReleased)
		h.released(a)
		if len(rest) > 0 {
			cause := h.err(fmt.Errorf("%w: released in Redis with this hold open", ErrLost))
			for _, r := range rest {
				r.cancel(cause)
			}
			h.ended(rest, cause)
		}
		return nil
	case isNotHeld(err):
		h.mu.Lock()
		h.releasing--
		h.mu.Unlock()
		h.end(h.err(fmt.Errorf("%w: it was no longer held at release", ErrLost)))
		return err
	default:
		h.mu.Lock()
		h.releasing--
		h.changed()
		a.releasing = false
		if stopped != nil && h.entry == nil {
			h.entry = stopped
			c.watchdog.readd(stopped)
		}
		h.mu.Unlock()
		return err
	}
}

// drop removes a from the stack. h.mu is held.
func (h *hold) drop(a *acq) {
	if i := slices.Index(h.stack, a); i >= 0 {
		h.stack = slices.Delete(h.stack, i, i+1)
		if a.watched {
			h.unwatch()
		}
		h.changed()
	}
}

// takeAll empties the stack and stops the renewal; it returns what was held. h.mu is held.
func (h *hold) takeAll() []*acq {
	all := h.stack
	h.stack = nil
	for _, a := range all {
		if a.watched {
			h.watched--
		}
	}
	if h.entry != nil && h.watched == 0 {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
	h.changed()
	return all
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
	all := h.takeAll()
	if h.entry != nil { // acquisitions in flight that confirm register anew
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
	h.mu.Unlock()
	h.forgetIfIdle()
	for _, a := range all {
		a.cancel(cause)
	}
	h.ended(all, cause)
}

// abandoned runs once the ctx of acquisition a has become unreachable: the program forgot its Unlock,
// and the Client reports it. When a was the hold's last acquisition kept by the watchdog, the hold
// stays as it is but is no longer renewed: the lock expires within its lease instead of being renewed
// for ever, and whatever still waits on a's Done channel is told when the lease may have ended, as
// for a lost hold. Otherwise a is dropped from the stack, so that the others can still be released
// (the lock then stays in Redis until its lease ends, since a's count is never released).
func abandoned(a *acq) {
	h := a.h
	h.mu.Lock()
	if a.releasing || !slices.Contains(h.stack, a) {
		h.mu.Unlock()
		return
	}
	// The last one kept by the watchdog stays, unrenewed, until the watchdog reports its lease ended;
	// one with a fixed lease goes, and its ctx ends at its deadline all the same.
	freeze := a.watched && h.entry != nil && len(h.stack) == 1 && h.pending == 0
	if freeze {
		h.c.watchdog.freeze(h.entry)
	} else {
		h.drop(a)
	}
	left := len(h.stack)
	h.mu.Unlock()
	if !freeze {
		h.forgetIfIdle()
		if a.watched {
			a.cancel(h.err(fmt.Errorf("%w: abandoned without Unlock", ErrLost)))
		}
	}
	h.abandonedEvent(a, freeze)
	h.c.cfg.logger().Warn("redisync: a hold's ctx was dropped without Unlock; it is no longer renewed and stays in Redis until its lease ends",
		"kind", h.kind, "name", h.name, "owner", h.id.field, "holds_left_here", left)
}

// forgetIfIdle drops the record once nothing is held or in flight.
func (h *hold) forgetIfIdle() {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending > 0 || len(h.stack) > 0 {
		return
	}
	if h.entry != nil {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
	if h.c.holds[h.id] == h {
		delete(h.c.holds, h.id)
	}
	h.changed() // acquisitions waiting on this record look again, and find a new one
}

func (h *hold) err(err error) error { return Errorf(h.kind, h.name, err) }

func isNotHeld(err error) bool { return errors.Is(err, ErrNotHeld) }

// WithHoldsOf returns ctx carrying, besides its own, the acquisitions that from carries: a composite
// lock re-enters its parts through it, with the caller's ctx for everything else.
func WithHoldsOf(ctx, from context.Context) context.Context { return &holdsOf{ctx, from} }

type holdsOf struct {
	context.Context
	from context.Context
}

func (x *holdsOf) Value(key any) any {
	if _, ok := key.(holdsKey); ok {
		return x
	}
	return x.Context.Value(key)
}
