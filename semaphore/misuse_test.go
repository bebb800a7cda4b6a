package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// semaphoreCalls are every method of s, with arguments that would take, give or read permits.
func semaphoreCalls(s *semaphore.Semaphore, ran *bool) testkit.Calls {
	ctx := context.Background()
	return testkit.Calls{
		"TrySetPermits":    func() error { _, err := s.TrySetPermits(ctx, 3); return err },
		"TrySetPermitsTTL": func() error { _, err := s.TrySetPermitsTTL(ctx, 3, time.Minute); return err },
		"AddPermits":       func() error { return s.AddPermits(ctx, 2) },
		"Acquire": func() error {
			// Not waited for: a wait would end with the deadline, not the refusal.
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return s.Acquire(ctx, 1)
		},
		"TryAcquire":             func() error { return s.TryAcquire(ctx, 1, 0) },
		"TryAcquire with a wait": func() error { return s.TryAcquire(ctx, 1, time.Minute) },
		"Release":                func() error { return s.Release(ctx, 1) },
		"ReleaseIfExists":        func() error { _, err := s.ReleaseIfExists(ctx, 1); return err },
		"Delete":                 func() error { _, err := s.Delete(ctx); return err },
		"Expire":                 func() error { _, err := s.Expire(ctx, time.Minute); return err },
		"Available":              func() error { _, err := s.Available(ctx); return err },
		"Drain":                  func() error { _, err := s.Drain(ctx); return err },
		"Do":                     func() error { return s.Do(ctx, 1, func(context.Context) error { *ran = true; return nil }) },
	}
}

// expirableCalls are every method of e; id is a permit id it has not issued.
func expirableCalls(e *semaphore.Expirable) testkit.Calls {
	ctx := context.Background()
	const id = "00112233445566778899aabbccddeeff"
	return testkit.Calls{
		"Acquire": func() error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := e.Acquire(ctx, 1)
			return err
		},
		"TryAcquire":             func() error { _, err := e.TryAcquire(ctx, 1, 0); return err },
		"TryAcquire with a wait": func() error { _, err := e.TryAcquire(ctx, 1, time.Minute); return err },
		"Release":                func() error { return e.Release(ctx, id) },
		"TryRelease":             func() error { _, err := e.TryRelease(ctx, id); return err },
		"UpdateLease":            func() error { return e.UpdateLease(ctx, id, time.Minute) },
		"LeaseLeft":              func() error { _, err := e.LeaseLeft(ctx, id); return err },
		"Available":              func() error { _, err := e.Available(ctx); return err },
		"Acquired":               func() error { _, err := e.Acquired(ctx); return err },
		"Permits":                func() error { _, err := e.Permits(ctx); return err },
		"SetPermits":             func() error { return e.SetPermits(ctx, 3) },
		"TrySetPermits":          func() error { _, err := e.TrySetPermits(ctx, 3); return err },
		"AddPermits":             func() error { return e.AddPermits(ctx, 2) },
		"Delete":                 func() error { _, err := e.Delete(ctx); return err },
		"Expire":                 func() error { _, err := e.Expire(ctx, time.Minute); return err },
	}
}

// TestCollidingNames: on a name that holds anything but a count (an application's string, hash or
// list, a lock's hash...), every method of both semaphores refuses with redisync.ErrWrongType at
// once, and changes nothing: Delete deletes nothing, Acquire waits for nothing.
func TestCollidingNames(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		for _, f := range testkit.ForeignsBut("count", "semaphore") {
			t.Run(f.Name, func(t *testing.T) {
				name := unique("colliding")
				f.Write(t, rdb, name)
				before := tg.State(t, rdb, name)
				ran := false
				testkit.RequireAll(t, redisync.ErrWrongType, semaphoreCalls(newSemaphore(t, c, name), &ran))
				require.False(t, ran, "Do ran fn")
				testkit.RequireAll(t, redisync.ErrWrongType, expirableCalls(newExpirable(t, c, name)))
				require.Equal(t, before, tg.State(t, rdb, name), "the name's keys after every method")
			})
		}
		// Permits of another type beside a count: the Expirable refuses, and leaves both alone.
		name := unique("colliding-permits")
		testkit.Do(t, rdb, "SET", name, "5")
		testkit.Do(t, rdb, "SET", "{"+name+"}:timeout", "application data")
		before := tg.State(t, rdb, name)
		testkit.RequireAll(t, redisync.ErrWrongType, expirableCalls(newExpirable(t, c, name)))
		require.Equal(t, before, tg.State(t, rdb, name), "the keys after every method")
	})
}

// TestDoGivesBackOnPanic: a panic in Do's fn goes on to the caller after the permits are back.
func TestDoGivesBackOnPanic(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		s := newSemaphore(t, tg.Client(t), unique("panic"))
		if _, err := s.TrySetPermits(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		func() {
			defer func() { require.Equal(t, boom, recover(), "the panic Do passed on") }()
			_ = s.Do(context.Background(), 2, func(context.Context) error { panic(boom) })
			t.Fatal("Do returned")
		}()
		require.EqualValues(t, 2, available(t, s), "permits available after Do's fn panicked")
	})
}

// TestAfterClose: once its Client is closed, every method of both semaphores returns
// redisync.ErrClosed.
func TestAfterClose(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		name := unique("closed")
		s, e := newSemaphore(t, c, name), newExpirable(t, c, name+"-expirable")
		require.NoError(t, c.Close())
		ran := false
		testkit.RequireAll(t, redisync.ErrClosed, semaphoreCalls(s, &ran))
		require.False(t, ran, "Do ran fn")
		testkit.RequireAll(t, redisync.ErrClosed, expirableCalls(e))
		ctx := context.Background()
		testkit.RequireAll(t, redisync.ErrClosed, testkit.Calls{ // the calls that would send nothing
			"Acquire(0)":              func() error { return s.Acquire(ctx, 0) },
			"Release(0)":              func() error { return s.Release(ctx, 0) },
			"ReleaseIfExists(0)":      func() error { _, err := s.ReleaseIfExists(ctx, 0); return err },
			"Expirable.Acquire(0)":    func() error { _, err := e.Acquire(ctx, 0); return err },
			"Expirable.Release(none)": func() error { return e.Release(ctx) },
		})
	})
}

// TestNoKeyAfterTheLastWaiter: once the last waiter has its permits, by a hand-over or by a try of
// its own, nothing is left beside the count: no waiter record, no record of the Clients that
// listened, no grant.
func TestNoKeyAfterTheLastWaiter(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("last-waiter")
		holder, waiter := newSemaphore(t, tg.Client(t), name), newSemaphore(t, tg.Client(t), name)
		require.NoError(t, holder.AddPermits(ctx, 1))
		require.NoError(t, holder.Acquire(ctx, 1))
		done := make(chan error, 1)
		go func() { done <- waiter.Acquire(ctx, 1) }()
		testkit.Eventually(t, 10*time.Second, func() error {
			if !exists(t, tg.Redis(t), "redisync_semaphore_waiters:{"+name+"}") {
				return errors.New("the waiter has not recorded itself")
			}
			return nil
		})
		require.NoError(t, holder.Release(ctx, 1)) // handed over
		require.NoError(t, <-done)
		gone(t, tg, "redisync_semaphore_waiters:{"+name+"}", clientsKey(name), "redisync_semaphore_grants:{"+name+"}")
		require.NoError(t, waiter.Release(ctx, 1))
	})
}
