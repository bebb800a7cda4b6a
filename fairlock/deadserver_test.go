package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

// TestFairLockQueriesReturnOnDeadServer: every query returns an error within
// core.RetryBound on a dead or stalled server, with a ctx that has no deadline.
func TestFairLockQueriesReturnOnDeadServer(t *testing.T) {
	for _, fault := range []string{"kill", "SIGSTOP"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel() // a server of its own, and time spent waiting out a bound
			tg := testkit.Own(t)
			l := newLock(t, tg.Client(t), "dead")
			held := mustLock(t, l, context.Background())
			mustUnlock(t, l, held)
			if fault == "kill" {
				if err := tg.Servers[0].Kill(); err != nil {
					t.Fatal(err)
				}
			} else {
				testkit.Stall(t, tg.Servers[0], fault)
			}
			queries := map[string]func() error{
				"IsLocked":  func() error { _, err := l.IsLocked(context.Background()); return err },
				"IsHeld":    func() error { _, err := l.IsHeld(held); return err },
				"HoldCount": func() error { _, err := l.HoldCount(held); return err },
				"TTL":       func() error { _, err := l.TTL(context.Background()); return err },
				"Waiting":   func() error { _, err := l.Waiting(context.Background()); return err },
			}
			errs := make(chan error, len(queries))
			for what, q := range queries {
				go func() {
					if err := q(); err == nil {
						errs <- fmt.Errorf("%s on a dead server returned no error", what)
					} else {
						errs <- nil
					}
				}()
			}
			start := time.Now()
			for range queries {
				if err := testkit.ReturnsWithin(t, start, core.RetryBound, "a query", func() error { return <-errs }); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestParkedFairLockReturnsAtDeadline: a parked waiter returns at its deadline, a
// ctx's or its wait bound's, while the server does not answer, and leaves the queue once it answers.
func TestParkedFairLockReturnsAtDeadline(t *testing.T) {
	const deadline = 2 * time.Second
	for _, how := range testkit.Stalls {
		for _, bound := range testkit.Bounds {
			t.Run(how+"/"+bound, func(t *testing.T) {
				t.Parallel() // a server of its own, and time spent waiting out a bound
				tg := testkit.Own(t)
				holder := newLock(t, tg.Client(t), "parked")
				held := mustLock(t, holder, context.Background())
				waiter := newLock(t, tg.Client(t, slow), "parked")
				start := time.Now()
				done := testkit.Bounded(bound, deadline,
					func(ctx context.Context) error { _, err := waiter.Lock(ctx); return err },
					func(ctx context.Context, wait time.Duration) error { _, err := waiter.TryLock(ctx, wait); return err })
				testkit.Eventually(t, 5*time.Second, func() error {
					if n := testkit.DoString(t, tg.Redis(t), "HLEN", recordsKey("parked")); n != "1" {
						return fmt.Errorf("%s waiter records, want 1", n)
					}
					return nil
				})
				resume := testkit.Stall(t, tg.Servers[0], how)
				err := testkit.ReturnsWithin(t, start, deadline+2*core.Overtime, "a parked Lock", func() error { return <-done })
				if want := testkit.BoundedErr(bound); !errors.Is(err, want) {
					t.Fatalf("parked Lock: %v, want %v", err, want)
				}
				resume()
				waitQueued(t, holder, 0)
				mustUnlock(t, holder, held)
			})
		}
	}
}
