package hold

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
)

// Holds: this client's record of what each owner holds.
//
// A hold is one owner's hold on one object (one field of a lock hash). It keeps a stack of the
// acquisitions not yet released, the innermost last. Re-entry is exclusive: an acquisition goes ahead
// only when its ctx carries the innermost one (or, with nothing held, any ctx of the owner); the
// others wait here, without a command, for their turn. So recursion re-enters at once, while
// goroutines fanned out from one held ctx take turns. Read holds (shared) let any of them in.
//
// One call of a hold is on its way to Redis at a time, acquisition or release: so the client knows
// exactly how many acquisitions Redis counts for the owner (held), and a call sent again after a lost
// answer tells by that count whether the first send acted (see once.go).

// ID names one owner's hold on one object: the object's main key, the owner, and what follows
// the owner in its field (Spec.Suffix).
type ID struct {
	Key    string
	Owner  int64
	Suffix string
}

// hold is this client's record of one owner's hold on one object.
type hold struct {
	c      *Holds
	id     ID
	field  string // the owner's field in the object
	kind   string
	name   string
	owner  int64
	shared bool
	renew  Renewal

	mu      sync.Mutex
	stack   []*Acq  // acquisitions held, the innermost last
	stack0  [2]*Acq // stack's first array, in the same allocation
	extra   int     // acquisitions Redis still counts that left the stack unreleased (abandoned)
	busy    int     // > 0 while a call of the hold is on its way: an acquisition, its tries, a release, a give-back
	pending int     // acquisitions entered and not yet ended
	watched int     // acquisitions held or in flight that the watchdog keeps
	entry   *entry  // watchdog registration, nil when none
	entry0  entry   // the first registration, in the same allocation (never reused: a round may hold it)
	used0   bool
	fixed   int    // acquisitions held with a fixed lease
	checked *entry // their registration with the watchdog, which only checks them (watchdog.check)
	turn    chan struct{}
}

// Acq is one acquisition of a hold: what its ctx carries and how it ends.
type Acq struct {
	h         *hold
	cancel    context.CancelCauseFunc
	watched   bool // kept by the watchdog, not by a fixed lease
	releasing bool // an Unlock of it is on its way
	released  atomic.Bool
	// rid names its release once sent: one that got no answer is sent again, under the same name,
	// by the next Unlock, so that it releases once whatever the first send did.
	rid    string
	waited bool          // it waited for the object, listening: a release may clear what waits leave
	at     time.Duration // when acquired, since epoch (only while events are observed)
	ext    *acqExt       // for a fixed lease, or a ctx taken with one that carries holds
}

// acqExt is what an acquisition with a fixed lease, or taken through other holds, needs beyond the
// common case, in an allocation of its own.
type acqExt struct {
	lease time.Duration // its fixed lease, which Extend may lengthen
	// The fixed lease's end as the client reckons it (less Drift), in Unix ns: the ctx's deadline,
	// when expiry cancels the ctx. Extend moves it on; expired is set once it passed (under h.mu).
	end     atomic.Int64
	expiry  *time.Timer
	expired bool
	fol     *follower // when the ctx it was taken with carries holds (follow.go)
}

// lease returns a's fixed lease, or 0 when the watchdog keeps it.
func (a *Acq) lease() time.Duration {
	if a.ext == nil {
		return 0
	}
	return a.ext.lease
}

// held is how many acquisitions Redis counts for the hold's owner, as far as this client knows. h.mu
// is held.
func (h *hold) held() int { return len(h.stack) + h.extra }

// holdsKey asks a ctx for the innermost heldCtx or holdsOf in its chain: a key of no size, which
// costs no allocation to ask with.
type holdsKey struct{}

// In finds, in ctx, the innermost acquisition of c's hold id that the ctx came from.
func (c *Holds) In(ctx context.Context, id ID) *Acq {
	for {
		switch x := ctx.Value(holdsKey{}).(type) {
		case *heldCtx:
			if x.a.h.c == c && x.a.h.id == id {
				return x.a
			}
			ctx = x.Context
		case *holdsOf:
			if a := c.In(x.from, id); a != nil {
				return a
			}
			ctx = x.Context
		default:
			return nil
		}
	}
}

// heldCtx is the ctx an acquisition hands out: it carries the acquisition, and its being dropped
// without Unlock is how an abandoned hold is noticed. It carries the owner too when its parent does
// not (a fresh owner), and holds its own detached view (see detach): both without an allocation.
// Its deadline is the earlier of its fixed lease's end, which Extend moves on, and its parent's.
type heldCtx struct {
	context.Context
	a        *Acq
	parent   context.Context // the ctx the acquisition was taken with
	owner    int64           // the fresh owner it carries, 0 when parent carries one
	detached detachedCtx
}

func (x *heldCtx) Value(key any) any {
	switch key.(type) {
	case holdsKey:
		return x
	case takenWithKey:
		return x.parent
	case ownerKey:
		if x.owner != 0 {
			return x
		}
	}
	return x.Context.Value(key)
}

func (x *heldCtx) Deadline() (time.Time, bool) {
	e := x.a.ext
	if e == nil {
		return x.Context.Deadline()
	}
	var d time.Time
	var ok bool
	if e.fol != nil {
		d, ok = e.fol.deadline()
	} else {
		d, ok = x.Context.Deadline()
	}
	if end := e.end.Load(); end != 0 {
		if t := time.Unix(0, end); !ok || t.Before(d) {
			return t, true
		}
	}
	return d, ok
}

// detachedCtx is its ctx's values without its cancellation, as context.WithoutCancel.
type detachedCtx struct{ ctx context.Context }

func (detachedCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detachedCtx) Done() <-chan struct{}       { return nil }
func (detachedCtx) Err() error                  { return nil }
func (d *detachedCtx) Value(key any) any        { return d.ctx.Value(key) }
func (d *detachedCtx) String() string           { return fmt.Sprintf("%v.WithoutCancel", d.ctx) }

func (x *heldCtx) String() string { return fmt.Sprintf("%v.WithHold(%s)", x.Context, x.a.h.id.Key) }

// object is what a hold is on, as Enter asks it when it records a new hold.
type object interface {
	// Describe says what the object is, for errors and events, and whether its holds are shared.
	Describe() (kind, name string, shared bool)
	// Field returns owner's field in the object, and how the watchdog renews the hold of it.
	Field(owner int64) (string, Renewal)
}

// Enter waits until the acquisition a of id, on o, through ctx may be sent, and books it: it
// returns how many acquisitions Redis counts for the owner before this one, and what is left of
// wait. id.Owner 0 is a fresh owner, never drawn before in this process, for a ctx that carries
// none (Commit's fresh). watched: the watchdog keeps it, and is registered before anything is
// sent, so that no renewal is missed. a then ends with Commit, or Abort.
func (c *Holds) Enter(ctx context.Context, a *Acq, o object, id ID, wait time.Duration, watched bool) (int, time.Duration, error) {
	if id.Owner == 0 {
		id.Owner = lastOwner.Add(1)
	}
	outer := c.In(ctx, id)
	var deadline time.Time
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return 0, 0, errs.ErrClosed
		}
		h := c.holdOf(id, o)
		h.mu.Lock()
		c.mu.Unlock()
		if h.mayEnter(outer) {
			h.busy = 1
			h.pending++
			if watched {
				h.watched++
				if h.entry == nil {
					h.register()
				}
			}
			held := h.held()
			h.mu.Unlock()
			if !deadline.IsZero() {
				wait = max(time.Until(deadline), 0)
			}
			a.h = h
			return held, wait, nil
		}
		if h.turn == nil {
			h.turn = make(chan struct{})
		}
		turn := h.turn
		h.mu.Unlock()
		if wait == 0 {
			return 0, 0, errs.ErrNotAcquired
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
			return 0, 0, errs.ErrNotAcquired
		case <-ctx.Done():
			return 0, 0, context.Cause(ctx)
		case <-c.s.Done():
			return 0, 0, errs.ErrClosed
		}
	}
}

// holdOf returns the hold id, on o, recorded anew when there is none. c.mu is held.
func (c *Holds) holdOf(id ID, o object) *hold {
	h := c.holds[id]
	if h == nil {
		h = &hold{c: c, id: id, owner: id.Owner}
		h.kind, h.name, h.shared = o.Describe()
		h.field, h.renew = o.Field(id.Owner)
		h.stack = h.stack0[:0]
		c.holds[id] = h
	}
	return h
}

// mayEnter reports whether an acquisition whose ctx carries outer (nil: none of this hold) may go
// ahead now. h.mu is held.
func (h *hold) mayEnter(outer *Acq) bool {
	switch {
	case h.busy > 0:
		return false
	case h.shared, len(h.stack) == 0:
		return true
	}
	return outer != nil && h.stack[len(h.stack)-1] == outer
}

// changed wakes the acquisitions and releases waiting for their turn. h.mu is held.
func (h *hold) changed() {
	if h.turn != nil {
		close(h.turn)
		h.turn = nil
	}
}

// Retain marks one more call of a's hold on its way (a try that runs apart, a give-back), which the
// hold's next call must wait for until Settle.
func (a *Acq) Retain() { a.h.retain() }

// Settle ends a call that Retain marked.
func (a *Acq) Settle() { a.h.settle() }

// Field returns the owner's field in the object, once Enter booked a.
func (a *Acq) Field() string { return a.h.field }

// Waited reports whether a waited for the object, listening: a release may clear what waits leave.
func (a *Acq) Waited() bool { return a.waited }

func (h *hold) retain() {
	h.mu.Lock()
	h.busy++
	h.mu.Unlock()
}

// settle ends a call that retain or enter marked.
func (h *hold) settle() {
	h.mu.Lock()
	h.settled()
	h.mu.Unlock()
	h.forgetIfIdle()
}

// settled is settle with h.mu held, for a caller that forgets the record itself.
func (h *hold) settled() {
	if h.busy--; h.busy == 0 {
		h.changed()
	}
}

// Abort undoes Enter after an acquisition that did not acquire; watched as Enter was told.
func (a *Acq) Abort(watched bool) { a.h.abort(watched) }

func (h *hold) abort(watched bool) {
	h.mu.Lock()
	h.pending--
	if watched {
		h.unwatch()
	}
	h.settled()
	h.mu.Unlock()
	h.forgetIfIdle()
}

// register registers the hold's renewal with the watchdog. h.mu is held.
func (h *hold) register() {
	var e *entry
	if !h.used0 {
		e, h.used0 = &h.entry0, true
	}
	h.entry = h.c.watchdog.add(e, h.renew, h, false)
}

// unfix drops one acquisition with a fixed lease, and its check with the last. h.mu is held.
func (h *hold) unfix() {
	if h.fixed--; h.fixed == 0 && h.checked != nil {
		h.c.watchdog.remove(h.checked)
		h.checked = nil
	}
}

// unwatch drops one acquisition kept by the watchdog, and the renewal with the last. h.mu is held.
func (h *hold) unwatch() {
	if h.watched--; h.watched == 0 && h.entry != nil {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
}

// Commit records a successful acquisition whose command was sent at start, and returns its ctx;
// lease > 0 is a fixed lease, whose end (less Drift) is the ctx's deadline; fresh: parent does not
// carry the owner, and the ctx must; waited: a waited for the object, listening.
//
// The returned ctx ends when the acquisition does, and when parent ends, but not by a release (see
// follow.go): where parent carries holds, the hold's ctx derives from parent's values alone, and a
// follower passes parent's end on.
func (a *Acq) Commit(parent context.Context, lease time.Duration, start time.Time, fresh, waited bool) context.Context {
	h := a.h
	a.waited = waited
	held := &heldCtx{a: a, parent: parent}
	// A re-entry of an exclusive hold derives from its outer hold as any ctx would: that one cannot
	// be released first (ErrNotInnermost), and its loss is this one's.
	x, _ := parent.Value(holdsKey{}).(*heldCtx)
	nested := carriesHolds(parent) && !(x != nil && x.a.h == h && !h.shared)
	if nested {
		held.Context, a.cancel = context.WithCancelCause(context.WithoutCancel(parent))
	} else {
		held.Context, a.cancel = context.WithCancelCause(parent)
	}
	if lease > 0 || nested {
		a.ext = &acqExt{lease: lease}
	}
	a.watched = lease == 0
	h.stamp(a)
	h.mu.Lock()
	if lease > 0 {
		end := start.Add(lease - Drift(lease))
		a.ext.end.Store(end.UnixNano())
		a.ext.expiry = time.AfterFunc(time.Until(end), a.expire)
	}
	if nested { // set before the acquisition can end; it follows once the ctx is made
		a.ext.fol = &follower{end: a.finish}
	}
	h.pending--
	h.stack = append(h.stack, a)
	if a.watched {
		if h.entry == nil { // the hold was lost while this acquisition was in flight
			h.register()
		}
		h.c.watchdog.confirm(h.entry, start)
	} else if h.fixed++; h.checked == nil {
		h.checked = h.c.watchdog.add(nil, h.renew, h, true)
	}
	h.settled()
	h.mu.Unlock()
	held.detached.ctx = held
	if fresh {
		held.owner = h.owner
	}
	if nested {
		a.ext.fol.follow(parent)
	}
	runtime.AddCleanup(held, abandoned, a)
	return held
}

// expire ends a's ctx when its fixed lease may have ended, unless Extend moved the end on.
func (a *Acq) expire() {
	h, e := a.h, a.ext
	h.mu.Lock()
	if left := time.Until(time.Unix(0, e.end.Load())); left > 0 {
		e.expiry.Reset(left)
		h.mu.Unlock()
		return
	}
	e.expired = true
	lease := e.lease
	h.mu.Unlock()
	a.finish(h.err(fmt.Errorf("%w: lease of %v ended", errs.ErrLost, lease)))
}

// finish ends a's ctx with cause, and stops what would end it otherwise.
func (a *Acq) finish(cause error) {
	a.cancel(cause)
	e := a.ext
	if e == nil {
		return
	}
	if e.fol != nil {
		e.fol.close()
	}
	a.h.mu.Lock()
	expiry := e.expiry
	a.h.mu.Unlock()
	if expiry != nil {
		expiry.Stop()
	}
}

// Extended moves a fixed lease's end on to end, unless it ended already or ends later; it reports
// whether the acquisition was still held.
func (a *Acq) Extended(end time.Time, lease time.Duration) bool {
	h := a.h
	h.mu.Lock()
	defer h.mu.Unlock()
	e := a.ext
	if (e != nil && e.expired) || a.releasing || a.released.Load() || !slices.Contains(h.stack, a) {
		return false
	}
	if a.watched || !end.After(time.Unix(0, e.end.Load())) {
		return true
	}
	e.end.Store(end.UnixNano())
	e.lease = lease
	return true
}

// Release releases the acquisition that ctx carries of owner's hold id with run, which runs the
// release in Redis given the number of acquisitions Redis counts for the owner and the call's request
// id (resent: a release of the acquisition that got no answer was sent under it before), and returns
// how many are left, or an error wrapping ErrNotHeld. An exclusive hold is released innermost first: one with
// others above it is ErrNotInnermost, and changes nothing.
//
// When this is the last acquisition the watchdog keeps, the renewal stops before run runs: a renewal
// must never outlive the release. If run fails for another reason the hold is left as it was,
// renewal included, so that the caller may try again.
func (c *Holds) Release(ctx context.Context, id ID, run func(field string, held int, lease time.Duration, rid string, resent bool) (int64, error)) error {
	a := c.In(ctx, id)
	c.mu.Lock()
	h := c.holds[id]
	c.mu.Unlock()
	if a != nil && a.released.Load() {
		return errs.ErrNotHeld
	}
	if h == nil || (a != nil && a.h != h) {
		// A hold this client keeps no record of (an acquisition of a Client that was closed, say), or
		// one that was lost: Redis says what is left, and the release clears it.
		_, err := run("", 0, 0, c.s.RequestID(), false)
		return err
	}
	if a == nil {
		return errs.ErrNotHeld
	}
	b, err := h.bookRelease(a)
	if err != nil {
		return err
	}
	remaining, err := run(h.field, b.held, a.lease(), a.rid, b.resent)
	switch {
	case err == nil:
		h.releasedIn(a, remaining)
	case errors.Is(err, errs.ErrNotHeld):
		h.mu.Lock()
		h.settled()
		h.mu.Unlock()
		h.end(h.err(fmt.Errorf("%w: it was no longer held at release", errs.ErrLost)))
	default:
		h.releaseFailed(a, b, err)
	}
	return err
}

// booking is a release on its way: how many acquisitions Redis counts for the owner, whether it is
// sent again under the request id of one that got no answer, and the watchdog's entries it stopped.
type booking struct {
	held               int
	resent             bool
	stopped, unchecked *entry
}

// bookRelease waits until a's release may be sent (no other call of the hold on its way), and
// books it: when a is the last acquisition the watchdog keeps, or the last with a fixed lease, its
// renewal or check stops first. An acquisition released already, or not the innermost of an
// exclusive hold, is refused.
func (h *hold) bookRelease(a *Acq) (booking, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		i := slices.Index(h.stack, a)
		switch {
		case a.releasing, i < 0: // released, or lost while the record lives on for other acquisitions
			return booking{}, errs.ErrNotHeld
		case !h.shared && i != len(h.stack)-1:
			return booking{}, errs.ErrNotInnermost
		}
		if h.busy == 0 {
			break
		}
		if h.turn == nil {
			h.turn = make(chan struct{})
		}
		turn := h.turn
		h.mu.Unlock()
		<-turn // the call on its way is answered within its bound
		h.mu.Lock()
	}
	a.releasing = true
	h.busy = 1
	b := booking{held: h.held(), resent: a.rid != ""}
	if !b.resent {
		a.rid = h.c.s.RequestID()
	}
	if a.watched && h.watched == 1 && h.entry != nil {
		b.stopped, h.entry = h.entry, nil
		h.c.watchdog.remove(b.stopped)
	}
	if !a.watched && h.fixed == 1 && h.checked != nil { // nor may a check find it released
		b.unchecked, h.checked = h.checked, nil
		h.c.watchdog.remove(b.unchecked)
	}
	return b, nil
}

// releasedIn records that Redis released a, and counts remaining acquisitions for the owner.
func (h *hold) releasedIn(a *Acq, remaining int64) {
	a.released.Store(true)
	h.mu.Lock()
	h.drop(a)
	var rest []*Acq
	if remaining <= 0 {
		// Redis holds nothing more for the owner: whatever else this client counted is gone.
		rest = h.takeAll()
	} else {
		h.extra = max(int(remaining)-len(h.stack), 0) // what Redis counts beyond the stack
	}
	h.settled()
	h.mu.Unlock()
	h.forgetIfIdle() // first: when a ctx ends, the client's record already says so
	a.finish(errs.ErrReleased)
	h.released(a)
	if len(rest) > 0 {
		cause := h.err(fmt.Errorf("%w: released in Redis with this hold open", errs.ErrLost))
		for _, r := range rest {
			r.finish(cause)
		}
		h.ended(rest, cause)
	}
}

// releaseFailed leaves the hold as it was before the release b of a, renewal included, so that the
// caller may try again: under the same request id when the release may have run (err is the
// connection's).
func (h *hold) releaseFailed(a *Acq, b booking, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a.releasing = false
	if !send.IsConnectionError(err) {
		a.rid = "" // answered: Redis refused it, and changed nothing
	}
	if b.stopped != nil && h.entry == nil {
		h.entry = b.stopped
		h.c.watchdog.readd(b.stopped)
	}
	if b.unchecked != nil && h.checked == nil {
		h.checked = b.unchecked
		h.c.watchdog.readd(b.unchecked)
	}
	h.settled()
}

// drop removes a from the stack. h.mu is held.
func (h *hold) drop(a *Acq) {
	if i := slices.Index(h.stack, a); i >= 0 {
		h.stack = slices.Delete(h.stack, i, i+1)
		if a.watched {
			h.unwatch()
		} else {
			h.unfix()
		}
		h.changed()
	}
}

// takeAll empties the stack and stops the renewal; it returns what was held. h.mu is held.
func (h *hold) takeAll() []*Acq {
	all := h.stack
	h.stack, h.extra = nil, 0
	for _, a := range all {
		if a.watched {
			h.watched--
		}
	}
	if h.entry != nil && h.watched == 0 {
		h.c.watchdog.remove(h.entry)
		h.entry = nil
	}
	if h.fixed = 0; h.checked != nil {
		h.c.watchdog.remove(h.checked)
		h.checked = nil
	}
	h.changed()
	return all
}

// Lose ends every hold this client has on key with cause (after a forced unlock, say): with a
// tail, only the holds of a lock over a list of values on key that share one of its values.
func (c *Holds) Lose(key string, tail []string, cause error) {
	c.mu.Lock()
	var all []*hold
	for id, h := range c.holds { // rare (a forced unlock): a scan beats a second index
		if id.Key == key && len(tail) == 0 {
			all = append(all, h)
			continue
		}
		values, ok := strings.CutPrefix(id.Key, key+"\x00") // a group lock's values follow
		if ok && (len(tail) == 0 || slices.ContainsFunc(strings.Split(values, "\x00"), func(v string) bool {
			return slices.Contains(tail, v)
		})) {
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
		a.finish(cause)
	}
	h.ended(all, cause)
}

// abandoned runs once the ctx of acquisition a has become unreachable: the program forgot its Unlock,
// and the Client reports it. When a was the hold's last acquisition kept by the watchdog, the hold
// stays as it is but is no longer renewed: the lock expires within its lease instead of being renewed
// for ever, and whatever still waits on a's Done channel is told when the lease may have ended, as
// for a lost hold. Otherwise a leaves the stack, so that the others can still be released, and is
// still counted as held in Redis (the lock then stays until its lease ends).
func abandoned(a *Acq) {
	h := a.h
	h.mu.Lock()
	if a.releasing || !slices.Contains(h.stack, a) {
		h.mu.Unlock()
		return
	}
	freeze := a.watched && h.entry != nil && len(h.stack) == 1 && h.pending == 0
	if freeze {
		h.c.watchdog.freeze(h.entry)
	} else {
		h.drop(a)
		h.extra++
	}
	left := len(h.stack)
	h.mu.Unlock()
	if !freeze {
		h.forgetIfIdle()
		if a.watched {
			a.finish(h.err(fmt.Errorf("%w: abandoned without Unlock", errs.ErrLost)))
		}
	}
	h.abandonedEvent(a, freeze)
	h.c.ev.Log().Warn("redisync: a hold's ctx was dropped without Unlock; it is no longer renewed and stays in Redis until its lease ends",
		"kind", h.kind, "name", h.name, "owner", h.field, "holds_left_here", left)
}

// forgetIfIdle drops the record once nothing is held or in flight.
func (h *hold) forgetIfIdle() {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending > 0 || len(h.stack) > 0 || h.busy > 0 {
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

func (h *hold) err(err error) error { return errs.Errorf(h.kind, h.name, err) }

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

// Detach returns ctx without its cancellation (context.WithoutCancel), or ctx itself when it cannot
// be cancelled anyway, which spares an allocation on the common path.
func Detach(ctx context.Context) context.Context {
	switch x := ctx.(type) {
	case *heldCtx:
		return &x.detached
	case *detachedCtx:
		return x
	}
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
