package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/errs"
	holds "github.com/redisync/redisync/internal/hold"
)

// sub is one acquired sub-lock: the Locker and the ctx its acquisition returned.
type sub struct {
	l    Locker
	ctx  context.Context
	lost bool // its hold ended without our release
}

// hold is one acquisition of a composite: the sub-locks it holds, and the ctx handed to the caller,
// which ends when fewer than quorum sub-locks are still held, when the validity deadline passes, or
// at Unlock.
type hold struct {
	kind, name string
	parent     context.Context // the caller's ctx (holds.Derive's): when it ends, the hold stays until Unlock
	ctx        context.Context // the hold's ctx, handed to the caller
	cancel     context.CancelCauseFunc
	quorum     int

	mu    sync.Mutex
	subs  []*sub // acquired and not yet released
	live  int    // subs not lost
	ended error  // nil while held; ErrReleased after Unlock, else why it was lost
	stops []func() bool
}

type holdKey struct{ owner any }

// newHold records subs as one hold of owner and returns the ctx for the caller. parent is what
// holds.Derive made of the caller's ctx, and unfollow its stop. A deadline that is not zero ends the
// hold with lost as its cause.
func newHold(owner any, kind, name string, parent context.Context, unfollow func(), subs []*sub, quorum int, deadline time.Time, lost error) context.Context {
	h := &hold{kind: kind, name: name, parent: parent, quorum: quorum, subs: subs, live: len(subs)}
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.CancelFunc(func() {})
	if !deadline.IsZero() {
		ctx, stop = context.WithDeadlineCause(ctx, deadline, lost)
	}
	h.cancel = func(cause error) { cancel(cause); stop(); unfollow() }
	h.stops = append(h.stops, func() bool { unfollow(); return true })
	ctx = context.WithValue(ctx, holdKey{owner}, h)
	h.ctx = ctx
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range subs {
		h.stops = append(h.stops, context.AfterFunc(s.ctx, func() { h.subEnded(s) }))
	}
	// When the deadline (the end of a lease, or of the validity time) passes, give everything back.
	h.stops = append(h.stops, context.AfterFunc(ctx, func() { h.lose(context.Cause(ctx)) }))
	return ctx
}

// holdOf returns the hold of owner that ctx came from.
func holdOf(ctx context.Context, owner any) *hold {
	h, _ := ctx.Value(holdKey{owner}).(*hold)
	return h
}

// reentering returns ctx for locking l again through the hold that ctx came from, if any: a sub-lock
// re-enters only through the ctx of its innermost hold.
func reentering(ctx context.Context, owner any, l Locker) context.Context {
	h := holdOf(ctx, owner)
	if h == nil {
		return ctx
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		if s.l == l {
			return holds.WithHoldsOf(ctx, s.ctx)
		}
	}
	return ctx
}

// held reports whether the hold has not ended: neither released nor lost, and its deadline (a lease's
// end, the validity time) not passed. When only the caller's ctx ended, it stays held until Unlock.
func (h *hold) held() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended == nil && (h.ctx.Err() == nil || h.parent.Err() != nil)
}

// set is what a MultiLock and a RedLock are made of: the sub-locks, the kind and name their errors
// give, and how many sub-locks make a hold (every one for a MultiLock, a majority for a RedLock).
// Its methods are the calls both make of their sub-locks; composite is the MultiLock or RedLock whose
// holds a ctx may carry.
type set struct {
	kind, name string
	locks      []Locker
	quorum     int
}

// newSet returns the set of locks, each lock needed by a hold. It needs at least one lock.
func newSet(kind string, locks []Locker) (set, error) {
	names := make([]string, len(locks))
	for i, l := range locks {
		if l == nil {
			return set{}, errs.Invalid(kind, "", "nil lock at %d", i)
		}
		names[i] = l.Name()
	}
	name := strings.Join(names, ",")
	if len(locks) == 0 {
		return set{}, errs.Invalid(kind, name, "no locks")
	}
	return set{kind: kind, name: name, locks: slices.Clone(locks), quorum: len(locks)}, nil
}

// checkBounds refuses a negative wait or lease: a caller's TryLock, LockFor or TryLockFor.
func (s *set) checkBounds(wait, lease time.Duration) error {
	if wait < 0 {
		return errs.Invalid(s.kind, s.name, "negative wait %v", wait)
	}
	if lease < 0 {
		return errs.Invalid(s.kind, s.name, "negative lease %v", lease)
	}
	return nil
}

// err names the composite in err; nil stays nil.
func (s *set) err(err error) error {
	if err == nil {
		return nil
	}
	return errs.Errorf(s.kind, s.name, err)
}

// unlock releases the hold of composite that ctx came from.
func (s *set) unlock(ctx context.Context, composite any) error {
	if ctx == nil {
		return errs.Invalid(s.kind, s.name, "nil context")
	}
	h := holdOf(ctx, composite)
	if h == nil {
		return s.err(errs.ErrNotHeld)
	}
	return h.unlock()
}

// isHeld reports whether ctx's owner holds at least quorum of the locks (atLeast), and whether the
// hold of composite that ctx comes from, if any, has not ended.
func (s *set) isHeld(ctx context.Context, composite any) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(s.kind, s.name, "nil context")
	}
	if h := holdOf(ctx, composite); h != nil && !h.held() {
		return false, nil
	}
	if _, ok := holds.OwnerID(ctx); !ok {
		return false, nil // nobody asks: nothing can be held
	}
	return s.atLeast(func(l Locker) (bool, error) { return l.IsHeld(ctx) })
}

// isHeldBy reports whether owner holds at least quorum of the locks, as isHeld does.
func (s *set) isHeldBy(ctx context.Context, owner int64) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(s.kind, s.name, "nil context")
	}
	return s.atLeast(func(l Locker) (bool, error) { return l.IsHeldBy(ctx, owner) })
}

// atLeast reports whether at least quorum of the locks answer q true, asked concurrently. The errors
// of the locks that could not be asked count only without a quorum; a refusal (see ask) always does.
func (s *set) atLeast(q func(Locker) (bool, error)) (bool, error) {
	n, subErrs, refused := ask(s.locks, q)
	switch {
	case refused != nil:
		return false, s.err(refused)
	case n >= s.quorum:
		return true, nil
	}
	return false, s.err(errors.Join(subErrs...))
}

// isLocked reports whether so many of the locks are held, by anyone, that fewer than quorum are
// free: a Lock would have to wait. The errors of the locks that could not be asked count only when
// the others do not decide it; a refusal, which would fail a Lock, always does.
func (s *set) isLocked(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(s.kind, s.name, "nil context")
	}
	held, subErrs, refused := ask(s.locks, func(l Locker) (bool, error) { return l.IsLocked(ctx) })
	need := len(s.locks) - s.quorum + 1 // held locks that leave fewer than quorum free
	switch {
	case refused != nil:
		return false, s.err(refused)
	case held >= need:
		return true, nil
	case held+len(subErrs) < need:
		return false, nil
	}
	return false, s.err(errors.Join(subErrs...))
}

// forceUnlock frees every lock whoever holds it, concurrently, and reports whether any was held.
func (s *set) forceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(s.kind, s.name, "nil context")
	}
	n, subErrs, _ := ask(s.locks, func(l Locker) (bool, error) { return l.ForceUnlock(ctx) })
	return n > 0, s.err(errors.Join(subErrs...))
}

// ask asks every lock q concurrently (they are usually on different servers), and returns how many
// answered true, the errors of those that failed, and those of them that no other answer outweighs
// (isFatal: a name that holds other data, a user without permission, a closed Client), joined, as
// they fail an acquisition rather than count as a server that could not be asked.
func ask(locks []Locker, q func(Locker) (bool, error)) (int, []error, error) {
	yes := make([]bool, len(locks))
	subErrs := make([]error, len(locks))
	var wg sync.WaitGroup
	for i, l := range locks {
		wg.Go(func() { yes[i], subErrs[i] = q(l) })
	}
	wg.Wait()
	n := 0
	var failed, fatal []error
	for i := range locks {
		switch {
		case subErrs[i] != nil:
			failed = append(failed, subErrs[i])
			if isFatal(subErrs[i]) {
				fatal = append(fatal, subErrs[i])
			}
		case yes[i]:
			n++
		}
	}
	return n, failed, errors.Join(fatal...)
}

// subEnded is called when a sub-lock's ctx ends.
func (h *hold) subEnded(s *sub) {
	if h.parent.Err() != nil {
		return // the caller's ctx ended, so did the sub-lock's: the lock stays held until Unlock
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended != nil || s.lost {
		return
	}
	s.lost = true
	h.live--
	if h.live < h.quorum {
		cause := context.Cause(s.ctx)
		if !errors.Is(cause, errs.ErrLost) {
			cause = fmt.Errorf("%w: %s ended: %w", errs.ErrLost, s.l.Name(), cause)
		}
		h.loseLocked(errs.Errorf(h.kind, h.name, cause))
	}
}

// lose ends the hold with cause unless it ended already or the caller's ctx ended.
func (h *hold) lose(cause error) {
	if h.parent.Err() != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended == nil {
		h.loseLocked(cause)
	}
}

// loseLocked ends the hold with cause and gives back the sub-locks still held, so that others need
// not wait for the owner's Unlock to have them. A release that fails is left for Unlock to retry.
func (h *hold) loseLocked(cause error) {
	h.ended = cause
	h.cancel(cause)
	h.releaseLocked()
}

// unlock releases the hold: every sub-lock still held. It reports ErrNotHeld when the hold had already
// ended (released, or lost: fewer than quorum sub-locks were still held). A release that fails is
// reported and kept, so that Unlock may be called again.
func (h *hold) unlock() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, stop := range h.stops {
		stop()
	}
	ended, live := h.ended, h.live
	if ended == nil && h.ctx.Err() != nil && h.parent.Err() == nil {
		ended = context.Cause(h.ctx) // the validity ended, and lose has not run yet
	}
	if h.ended == nil {
		h.ended = errs.ErrReleased
	}
	released, notHeld, subErrs := h.releaseLocked()
	switch {
	case ended == nil:
		h.cancel(errs.ErrReleased)
		if live-notHeld < h.quorum {
			subErrs = append(subErrs, fmt.Errorf("%w: only %d of the %d sub-locks needed were still held", errs.ErrNotHeld, live-notHeld, h.quorum))
		}
	case ended == errs.ErrReleased:
		if released == 0 && len(subErrs) == 0 {
			subErrs = append(subErrs, errs.ErrNotHeld)
		}
	default:
		subErrs = append(subErrs, fmt.Errorf("%w: %w", errs.ErrNotHeld, ended))
	}
	if len(subErrs) == 0 {
		return nil
	}
	return errs.Errorf(h.kind, h.name, errors.Join(subErrs...))
}

// releaseLocked unlocks, concurrently, every sub-lock not lost, and forgets them. It counts those
// released and those found not held; the others failed, stay for a later Unlock, and give the errors.
func (h *hold) releaseLocked() (released, notHeld int, subErrs []error) {
	results := releaseAll(h.subs)
	var keep []*sub
	for i, err := range results {
		switch {
		case h.subs[i].lost && (err == nil || errors.Is(err, errs.ErrNotHeld)):
		case err == nil:
			released++
		case errors.Is(err, errs.ErrNotHeld):
			notHeld++
		default:
			keep = append(keep, h.subs[i])
			subErrs = append(subErrs, err)
		}
	}
	h.subs = keep
	return released, notHeld, subErrs
}

// releaseAll unlocks every sub concurrently (they are usually on different servers) and returns one
// error per sub. A lost sub is unlocked too: it answers ErrNotHeld, and its lock forgets the hold.
func releaseAll(subs []*sub) []error {
	subErrs := make([]error, len(subs))
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Go(func() { subErrs[i] = s.l.Unlock(s.ctx) })
	}
	wg.Wait()
	return subErrs
}

// giveBack releases what a failed acquisition took. A release that fails is reported with the
// acquisition's error: that sub-lock stays held until its lease ends.
func giveBack(subs []*sub, err error) error {
	var subErrs []error
	for i, e := range releaseAll(subs) {
		if e != nil && !errors.Is(e, errs.ErrNotHeld) {
			subErrs = append(subErrs, fmt.Errorf("could not give back %s: %w", subs[i].l.Name(), e))
		}
	}
	if len(subErrs) == 0 {
		return err
	}
	return errors.Join(append([]error{err}, subErrs...)...)
}
