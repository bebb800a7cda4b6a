package multilock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	holds "github.com/redisync/redisync/internal/hold"
)

// RedLock is the Redlock algorithm over N locks, one per independent Redis server (not replicas of
// one another, not nodes of one cluster): it holds the lock when it holds a majority, N/2+1, of them.
// It is safe for concurrent use. One attempt tries every server at once, waiting at most the instance
// timeout (WithInstanceTimeout); it succeeds when a majority acquired and time is left: the validity
// time is the sub-locks' lease, less the attempt's time and a drift allowance of 1% + 2 ms. The ctx
// Lock returns ends with the validity time. A failed attempt gives back whatever it acquired, also on
// servers that answered late, and the next starts after a random delay (WithRetryDelay).
//
// Give the sub-locks a fixed lease (rlock.WithLease, or LockFor's): that is the Redlock algorithm,
// and the validity is bounded. Sub-locks kept by their Clients' watchdogs have no fixed validity:
// the hold lasts until fewer than a majority of them are still held.
//
// The hold's ctx ends with redisync.ErrLost when the validity time ends or when so many sub-locks are
// lost that no majority is left; the rest are then given back at once. Read what it does not
// guarantee in the package doc.
type RedLock struct {
	set
	o redOptions
}

const redKind = "redlock"

// Option configures a RedLock (see RedLock.With).
type Option func(*redOptions)

type redOptions struct{ timeout, retryDelay time.Duration }

// WithInstanceTimeout bounds how long an attempt waits for the servers' answers (default 50 ms). A
// server that has not answered by then counts as failed; if it acquires later, it is given back. Keep
// it small next to the lease.
func WithInstanceTimeout(d time.Duration) Option { return func(o *redOptions) { o.timeout = d } }

// WithRetryDelay sets the pause between failed attempts: a random duration between d/2 and d (default
// 100 ms), so that contenders that collided try again at different times.
func WithRetryDelay(d time.Duration) Option { return func(o *redOptions) { o.retryDelay = d } }

// NewRedLock returns a RedLock over locks (Redisson's new RedissonRedLock(locks...)), usually one
// lock of the same name per server, each on its own redisync.Client. It has the default options;
// With returns one with others.
func NewRedLock(locks ...Locker) (*RedLock, error) {
	s, err := newSet(redKind, locks)
	if err != nil {
		return nil, err
	}
	s.quorum = len(locks)/2 + 1
	return &RedLock{set: s, o: redOptions{timeout: 50 * time.Millisecond, retryDelay: 100 * time.Millisecond}}, nil
}

// With returns a RedLock over the same locks with opts applied, and r unchanged: the locks come
// first, one by one, as in New, and the options after them.
//
//	r, err := multilock.NewRedLock(a, b, c)
//	r, err = r.With(multilock.WithInstanceTimeout(20 * time.Millisecond))
func (r *RedLock) With(opts ...Option) (*RedLock, error) {
	c := *r
	for _, o := range opts {
		o(&c.o)
	}
	if c.o.timeout <= 0 {
		return nil, errs.Invalid(redKind, r.name, "instance timeout %v: want more than 0", c.o.timeout)
	}
	if c.o.retryDelay <= 0 {
		return nil, errs.Invalid(redKind, r.name, "retry delay %v: want more than 0", c.o.retryDelay)
	}
	return &c, nil
}

// Name returns the names of the sub-locks, joined by commas.
func (r *RedLock) Name() string { return r.name }

// Quorum returns how many sub-locks the RedLock must hold: N/2+1.
func (r *RedLock) Quorum() int { return r.quorum }

// Lock tries until it holds a majority of the sub-locks with validity time left, or ctx ends. It
// returns a ctx that carries the owner, has the end of the validity time as its deadline, and ends
// when the RedLock stops being held; pass it to Unlock. A sub-lock refused with
// redisync.ErrWrongType or redisync.ErrNoPermission (its name holds other data, its user lacks a
// permission) fails the attempt with that error, holding nothing, whatever the others answer.
func (r *RedLock) Lock(ctx context.Context) (context.Context, error) {
	return r.acquire(ctx, -1, ownLease)
}

// TryLock is Lock with a wait bound: it gives up with redisync.ErrNotAcquired when no attempt that
// started within wait succeeded; with wait 0 it makes one attempt.
func (r *RedLock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	if err := r.checkBounds(wait, 0); err != nil {
		return nil, err
	}
	return r.acquire(ctx, wait, ownLease)
}

// LockFor is Lock with one lease for every sub-lock (Redisson's lock(leaseTime, unit)): lease > 0
// is fixed, and bounds the validity time; 0 is the watchdog's, whatever the sub-locks' options.
func (r *RedLock) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := r.checkBounds(0, lease); err != nil {
		return nil, err
	}
	return r.acquire(ctx, -1, lease)
}

// TryLockFor is TryLock with one lease for every sub-lock (Redisson's tryLock(waitTime, leaseTime,
// unit)): see LockFor.
func (r *RedLock) TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if err := r.checkBounds(wait, lease); err != nil {
		return nil, err
	}
	return r.acquire(ctx, wait, lease)
}

func (r *RedLock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if ctx == nil {
		return nil, errs.Invalid(redKind, r.name, "nil context")
	}
	if _, ok := holds.OwnerID(ctx); !ok {
		ctx = holds.WithNewOwner(ctx)
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return nil, r.err(context.Cause(ctx))
		}
		held, err := r.attempt(ctx, lease)
		if err == nil || !errors.Is(err, errs.ErrNotAcquired) {
			return held, err
		}
		if wait == 0 || (wait > 0 && !time.Now().Before(deadline)) {
			return nil, err
		}
		delay := r.o.retryDelay/2 + rand.N(r.o.retryDelay/2+1)
		if wait > 0 {
			delay = min(delay, time.Until(deadline))
		}
		timer.Reset(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, r.err(context.Cause(ctx))
		}
	}
}

type answer struct {
	l    Locker
	ctx  context.Context
	err  error
	sent time.Time
}

// attempt is one round of the algorithm, with lease for every sub-lock (ownLease: each its own).
func (r *RedLock) attempt(ctx context.Context, lease time.Duration) (context.Context, error) {
	start := time.Now()
	// The tries are not cancelled with ctx: one in flight may still acquire, and must be known so
	// that it can be given back. Their ctx carries the owner and no deadline but their lease.
	base := context.WithoutCancel(ctx)
	answers := make(chan answer, len(r.locks))
	for _, l := range r.locks {
		go func() {
			sent := time.Now()
			c, err := lockSub(reentering(base, r, l), l, 0, lease)
			answers <- answer{l: l, ctx: c, err: err, sent: sent}
		}()
	}
	got, subErrs, pending := r.collect(answers)
	subs := make([]*sub, len(got))
	for i, a := range got {
		subs[i] = &sub{l: a.l, ctx: a.ctx}
	}
	fail := func(err error) (context.Context, error) {
		return nil, r.err(giveBack(subs, err))
	}
	for _, err := range subErrs {
		if !errors.Is(err, errs.ErrNotAcquired) && isFatal(err) {
			return fail(err)
		}
	}
	if ctx.Err() != nil {
		return fail(context.Cause(ctx))
	}
	if len(got) < r.quorum {
		return fail(r.noQuorum(len(got), subErrs, pending))
	}
	validUntil := r.validity(start, got)
	if !validUntil.IsZero() && !time.Now().Before(validUntil) {
		return fail(fmt.Errorf("%w: acquired a majority, but the validity time ran out while doing so", errs.ErrNotAcquired))
	}
	lost := r.err(fmt.Errorf("%w: the validity time ended", errs.ErrLost))
	parent, unfollow := holds.Derive(ctx) // the tries' ctx carries no cancellation: nothing races it
	return newHold(r, redKind, r.name, parent, unfollow, subs, r.quorum, validUntil, lost), nil
}

// collect awaits the tries' answers until all came or the timeout passed: even when the outcome is
// clear, answers that come within it are awaited, so that what they acquired is given back before
// the attempt returns; what late answers acquire is given back as soon as they come. It returns the
// acquisitions, the errors, and how many did not answer in time.
func (r *RedLock) collect(answers chan answer) (got []answer, failed []error, pending int) {
	timeout := time.NewTimer(r.o.timeout)
	defer timeout.Stop()
	for pending = len(r.locks); pending > 0; {
		select {
		case a := <-answers:
			pending--
			if a.err == nil {
				got = append(got, a)
			} else {
				failed = append(failed, a.err)
			}
		case <-timeout.C:
			go func(late int) {
				for range late {
					if a := <-answers; a.err == nil {
						a.l.Unlock(a.ctx)
					}
				}
			}(pending)
			return got, failed, pending
		}
	}
	return got, failed, 0
}

// noQuorum is the error of an attempt that acquired fewer locks than its quorum: acquired of them,
// failed the errors of the others, and pending how many did not answer in time.
func (r *RedLock) noQuorum(acquired int, failed []error, pending int) error {
	err := fmt.Errorf("%w: %d of %d servers acquired, %d needed (%d refused or failed, %d did not answer within %v)",
		errs.ErrNotAcquired, acquired, len(r.locks), r.quorum, len(failed), pending, r.o.timeout)
	for _, e := range failed {
		if !errors.Is(e, errs.ErrNotAcquired) {
			err = fmt.Errorf("%w; %w", err, e)
		}
	}
	return err
}

// validity returns when the majority's validity ends: of the acquired locks with a fixed lease, the
// quorum-th latest end. A sub-lock's ctx deadline already is its lease's end less the clock drift
// allowance (holds.Drift), counted from when it sent its try; moved back to the attempt's start, it
// is start + L - drift(L), with the drift subtracted once. Zero when a majority has no fixed lease
// (watchdog renewals keep it).
func (r *RedLock) validity(start time.Time, got []answer) time.Time {
	ends := make([]time.Time, 0, len(got))
	for _, a := range got {
		if d, ok := a.ctx.Deadline(); ok {
			ends = append(ends, d.Add(-a.sent.Sub(start)))
		}
	}
	unbounded := len(got) - len(ends)
	if unbounded >= r.quorum {
		return time.Time{}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return b.Compare(a) }) // latest first
	return ends[r.quorum-unbounded-1]
}

// isFatal reports errors that another attempt cannot cure: a server whose name holds other data
// (ErrWrongType) or whose user lacks a permission fails the RedLock rather than count as one
// server down, which would hide the misuse behind a majority.
func isFatal(err error) bool {
	return errors.Is(err, errs.ErrInvalidArgument) || errors.Is(err, errs.ErrAlreadyHeld) || errors.Is(err, errs.ErrClosed) ||
		errors.Is(err, errs.ErrWrongType) || errors.Is(err, errs.ErrNoPermission)
}

// Unlock releases every sub-lock of the acquisition that ctx came from, on every server. It releases
// even when ctx has been cancelled. It returns an error matching redisync.ErrNotHeld when ctx holds
// nothing of this RedLock, or when the hold had been lost (fewer than a majority were still held; the
// others are released all the same). A sub-lock whose release fails is named in the error, and
// Unlock may be called again for it.
func (r *RedLock) Unlock(ctx context.Context) error {
	return r.unlock(ctx, r)
}

// IsHeld reports whether the owner that ctx carries holds a majority of the sub-locks, asking each
// of them, and, when ctx comes from a hold of this RedLock, whether that hold has not ended (by
// Unlock, by the end of its validity time, or by the loss of its majority). A sub-lock that cannot
// be asked does not count; its error is returned only when the others are not a majority. A sub-lock
// refused as Lock's doc says fails the call with that error, whatever the others answer. Like
// Unlock, it answers even when ctx has ended.
func (r *RedLock) IsHeld(ctx context.Context) (bool, error) {
	return r.isHeld(ctx, r)
}

// IsHeldBy reports whether owner, an owner id (redisync.OwnerID of a hold's ctx), holds a majority
// of the sub-locks, asking each of them (Redisson's isHeldByThread). A sub-lock that cannot be asked
// does not count; its error is returned only when the others are not a majority. A sub-lock refused
// as Lock's doc says fails the call with that error, whatever the others answer.
func (r *RedLock) IsHeldBy(ctx context.Context, owner int64) (bool, error) {
	return r.isHeldBy(ctx, owner)
}

// IsLocked reports whether so many sub-locks are held, by anyone, that no majority is free: whether
// an attempt would fail now. A sub-lock that cannot be asked counts only when the others do not
// decide it; one refused as Lock's doc says fails the call with that error, as it would fail an
// attempt. (Redisson's RedLock does not offer it.)
func (r *RedLock) IsLocked(ctx context.Context) (bool, error) {
	return r.isLocked(ctx)
}

// ForceUnlock frees every sub-lock whoever holds it, on every server, and reports whether any was
// held. Holds of this RedLock end with redisync.ErrLost once fewer than a majority of their
// sub-locks are held: on this Client at once. A sub-lock that could not be freed is named in the
// error; the others are freed all the same. (Redisson's RedLock does not offer it.)
func (r *RedLock) ForceUnlock(ctx context.Context) (bool, error) {
	return r.forceUnlock(ctx)
}

// Do runs fn while holding the RedLock: it locks (trying as Lock does), runs fn with the hold's ctx,
// which ends when the validity time does, and unlocks. If the hold is lost, Do returns fn's error
// joined with the cause. When fn panics, every sub-lock is released (and fn's ctx ends with
// redisync.ErrReleased) before the panic goes on to the caller.
func (r *RedLock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, r.Lock, r.Unlock, fn)
}
