package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/semaphore"
)

// of returns the kinds of the events reported for name, and the last of them.
func (r *recorder) of(name string) ([]redisync.EventKind, redisync.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var kinds []redisync.EventKind
	var last redisync.Event
	for _, e := range r.events {
		if e.Name == name {
			kinds, last = append(kinds, e.Kind), e
		}
	}
	return kinds, last
}

func wantKinds(t *testing.T, r *recorder, name string, want ...redisync.EventKind) redisync.Event {
	t.Helper()
	got, last := r.of(name)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: events %v, want %v", name, got, want)
	}
	return last
}

// Semaphores, rate limiters and latches report their acquisitions, waits and refusals as locks do.
func TestEventsSemaphoreRateLatch(t *testing.T) {
	tg := testkit.Standalone(t)
	ctx := context.Background()
	var r recorder
	c := tg.Client(t, r.options()...)
	const (
		acq  = redisync.EventAcquired
		wait = redisync.EventWaiting
		not  = redisync.EventNotAcquired
	)

	sem, _ := semaphore.New(c, "events-sem")
	sem.TrySetPermits(ctx, 1)
	defer sem.Delete(ctx)
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := sem.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryAcquire(0) = %v", err)
	}
	got := testkit.Background(func() (context.Context, error) { return ctx, sem.Acquire(ctx, 1) })
	testkit.Eventually(t, 10*time.Second, func() error {
		if kinds, _ := r.of("events-sem"); len(kinds) < 3 {
			return errors.New("the waiter has not reported waiting yet")
		}
		return nil
	})
	if err := sem.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, got, "semaphore waiter")
	if e := wantKinds(t, &r, "events-sem", acq, not, wait, acq); !e.Waited || e.Primitive != "semaphore" {
		t.Errorf("the waiter's acquisition reported %+v: want waited", e)
	}

	exp, _ := semaphore.NewExpirable(c, "events-exp", semaphore.WithLease(time.Minute))
	exp.TrySetPermits(ctx, 1)
	defer exp.Delete(ctx)
	ids, err := exp.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Release(ctx, ids...)
	// A wait whose bound passes during its first try never waits: 2 s leaves a busy machine time
	// for that try.
	if _, err := exp.TryAcquire(ctx, 1, 2*time.Second); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryAcquire(2s) = %v", err)
	}
	if e := wantKinds(t, &r, "events-exp", acq, wait, not); !e.Waited || e.Wait < 2*time.Second {
		t.Errorf("the bounded wait reported %+v", e)
	}

	limiter, _ := ratelimit.New(c, "events-rate")
	limiter.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: time.Hour})
	defer limiter.Delete(ctx)
	if err := limiter.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := limiter.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryAcquire(0) = %v", err)
	}
	if e := wantKinds(t, &r, "events-rate", acq, not); e.Waited || e.Primitive != "rate limiter" {
		t.Errorf("the refusal reported %+v", e)
	}

	latch, _ := countdown.New(c, "events-latch")
	latch.TrySetCount(ctx, 1)
	defer latch.Delete(ctx)
	if err := latch.TryAwait(ctx, 2*time.Second); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryAwait = %v, want ErrNotAcquired", err)
	}
	if err := latch.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := latch.Await(ctx); err != nil {
		t.Fatal(err)
	}
	if e := wantKinds(t, &r, "events-latch", wait, not, redisync.EventCountedDown, acq); e.Waited || e.Primitive != "countdown latch" {
		t.Errorf("the await of an open latch reported %+v", e)
	}
}
