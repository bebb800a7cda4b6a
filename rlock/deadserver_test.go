package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

// TestLockReturnsWhenServerDiesWhileSubscribing: a waiter whose channels cannot be
// subscribed still tries at its recheck interval, and so learns that the server has died.
func TestLockReturnsWhenServerDiesWhileSubscribing(t *testing.T) {
	const recheck = time.Second
	tg := testkit.Own(t)
	s := tg.Servers[0]
	holder := newLock(t, tg.Client(t), "dead")
	held := mustLock(t, holder, context.Background())
	// From now on no subscription succeeds: the waiter stays in its subscribing state.
	if _, err := s.Do("ACL", "SETUSER", "default", "resetchannels"); err != nil {
		t.Fatal(err)
	}
	c := tg.Client(t, redisync.WithRecheckInterval(recheck))
	waiter := newLock(t, c, "dead")
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Lock(context.Background())
		done <- err
	}()
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := core.Of(c).Notifier().Waiters(); n == 0 {
			return errors.New("the waiter does not listen yet")
		}
		return nil
	})
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	err := testkit.ReturnsWithin(t, time.Now(), recheck+core.RetryBound+core.Overtime, "Lock on a server that died", func() error { return <-done })
	if err == nil {
		t.Fatal("Lock on a killed server acquired")
	}
	// Back, empty: the holder finds its lock gone, which ends its hold.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Unlock(held); err != nil && !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatal(err)
	}
}

// TestLockQueriesReturnOnDeadServer: every query returns an error within
// core.RetryBound on a dead or stalled server, with a ctx that has no deadline.
func TestLockQueriesReturnOnDeadServer(t *testing.T) {
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
			for range queries {
				if err := testkit.ReturnsWithin(t, time.Now(), core.RetryBound, "a query", func() error { return <-errs }); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestParkedLockReturnsAtDeadline: a parked waiter returns at its deadline, a ctx's or
// its wait bound's, while the server does not answer, and gives back whatever it was still asking for.
func TestParkedLockReturnsAtDeadline(t *testing.T) {
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
				oneWaiter(t, tg, "parked")
				resume := testkit.Stall(t, tg.Servers[0], how)
				err := testkit.ReturnsWithin(t, start, deadline+2*core.Overtime, "a parked Lock", func() error { return <-done })
				if want := testkit.BoundedErr(bound); !errors.Is(err, want) {
					t.Fatalf("parked Lock: %v, want %v", err, want)
				}
				resume()
				mustUnlock(t, holder, held)
				testkit.Eventually(t, 5*time.Second, func() error {
					if r := waiterRecords(t, tg, "parked"); len(r) != 0 {
						return fmt.Errorf("waiter records left: %v", r)
					}
					return nil
				})
			})
		}
	}
}
