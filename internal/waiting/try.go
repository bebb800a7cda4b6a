package waiting

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
)

// try runs one attempt on t.undo, which ignores cancellation. When the attempt could overrun ctx's
// deadline or stop (the end of a wait bound; zero for none) it runs on a goroutine of its own, and the
// caller stops waiting for it when ctx ends (its cause) or stop passes (ErrNotAcquired); the attempt
// then finishes on its own and anything it acquired is given back.
func (c *Waiter) try(ctx context.Context, stop time.Time, t tries, w Wait) (bool, time.Duration, error) {
	var r result
	if !c.mayOverrun(ctx, stop) {
		r.ok, r.retryIn, r.err = w.Tries.Try(t.undo, t.within)
	} else if r = tryApart(ctx, stop, t, w); r.late {
		if ctx.Err() != nil {
			return false, 0, context.Cause(ctx)
		}
		return false, 0, errs.ErrNotAcquired
	}
	// A try that acquired must not keep it when it reports an error (the replicas did not acknowledge
	// the write) or when the caller has gone; one whose answer never came may have acquired.
	switch {
	case r.ok && (r.err != nil || ctx.Err() != nil):
		w.Tries.Undo(t.undo, true)
		if r.err == nil {
			r.err = context.Cause(ctx)
		}
		return false, 0, r.err
	case !r.ok && send.IsConnectionError(r.err):
		w.Tries.Undo(t.undo, false)
	}
	return r.ok, r.retryIn, r.err
}

// tries are what a wait's tries run on: a ctx without the caller's cancellation, on which what they
// give back runs too, and the bounds within which they are sent again.
type tries struct {
	undo   context.Context
	within send.Bounds
}

// earliest returns the earlier of a and b, where zero is no time at all (never).
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

type result struct {
	ok      bool
	retryIn time.Duration
	err     error
	late    bool // ctx ended or stop passed first: the try goes on alone, and undo gives back what it acquires
}

// tryApart runs try on a goroutine of its own and waits for it until ctx ends or stop (if not zero)
// passes.
func tryApart(ctx context.Context, stop time.Time, t tries, w Wait) result {
	done := make(chan result, 1)
	if w.Hold != nil {
		w.Hold.Retain()
	}
	go func() {
		var r result
		r.ok, r.retryIn, r.err = w.Tries.Try(t.undo, t.within)
		done <- r
	}()
	var expired <-chan time.Time
	if !stop.IsZero() {
		t := time.NewTimer(time.Until(stop))
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-done:
		if w.Hold != nil {
			w.Hold.Settle()
		}
		return r
	case <-ctx.Done():
	case <-expired:
	}
	go func() {
		switch r := <-done; {
		case r.ok:
			w.Tries.Undo(t.undo, true)
		case send.IsConnectionError(r.err):
			w.Tries.Undo(t.undo, false)
		}
		if w.Hold != nil {
			w.Hold.Settle()
		}
	}()
	return result{late: true}
}

// mayOverrun reports whether a try could still be in flight at ctx's deadline or at stop: there is
// one, and the bound on a try (its sends again after connection failures, then the connection's own
// bound on the last of them) may come later, or is unknown.
func (c *Waiter) mayOverrun(ctx context.Context, stop time.Time) bool {
	dl, ok := ctx.Deadline()
	if !stop.IsZero() && (!ok || stop.Before(dl)) {
		dl, ok = stop, true
	}
	return ok && (c.stall <= 0 || time.Until(dl) <= send.RetryBound+c.stall)
}
