package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

// TestAcquireReturnsWhenServerDiesWhileSubscribing: a waiter whose channels cannot be
// subscribed still tries at its recheck interval, and so learns that the server has died.
func TestAcquireReturnsWhenServerDiesWhileSubscribing(t *testing.T) {
	const recheck = time.Second
	tg := testkit.Own(t)
	s := tg.Servers[0]
	// From now on no subscription succeeds: the waiter stays in its subscribing state.
	if _, err := s.Do("ACL", "SETUSER", "default", "resetchannels"); err != nil {
		t.Fatal(err)
	}
	c := tg.Client(t, redisync.WithRecheckInterval(recheck))
	sem := newSemaphore(t, c, "dead") // never set: no permit
	done := make(chan error, 1)
	go func() { done <- sem.Acquire(context.Background(), 1) }()
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := core.Of(c).Notifier().Waiters(); n == 0 {
			return errors.New("the waiter does not listen yet")
		}
		return nil
	})
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	err := testkit.ReturnsWithin(t, time.Now(), recheck+send.RetryBound+send.Overtime, "Acquire on a server that died", func() error { return <-done })
	if err == nil {
		t.Fatal("Acquire on a killed server acquired")
	}
}

// TestAvailableReturnsOnDeadServer: Available returns an error within send.RetryBound
// on a dead or stalled server, with a ctx that has no deadline.
func TestAvailableReturnsOnDeadServer(t *testing.T) {
	for _, fault := range []string{"kill", "SIGSTOP"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel() // a server of its own, and time spent waiting out a bound
			tg := testkit.Own(t)
			c := tg.Client(t)
			sem := newSemaphore(t, c, "dead")
			exp := newExpirable(t, c, "dead-expirable")
			if fault == "kill" {
				if err := tg.Servers[0].Kill(); err != nil {
					t.Fatal(err)
				}
			} else {
				testkit.Stall(t, tg.Servers[0], fault)
			}
			queries := map[string]func() error{
				"Semaphore.Available": func() error { _, err := sem.Available(context.Background()); return err },
			}
			if fault == "kill" {
				// Its script is not sent again after a network error: it fails at once. On a stalled
				// server the connection's own timeouts bound it.
				queries["Expirable.Available"] = func() error { _, err := exp.Available(context.Background()); return err }
			}
			for what, q := range queries {
				if err := testkit.ReturnsWithin(t, time.Now(), send.RetryBound, what, q); err == nil {
					t.Errorf("%s on a dead server returned no error", what)
				}
			}
		})
	}
}

// TestParkedAcquireReturnsAtDeadline: a parked waiter returns at its deadline, a ctx's
// or its wait bound's, while the server does not answer, and its record is removed once it answers.
func TestParkedAcquireReturnsAtDeadline(t *testing.T) {
	const deadline = 2 * time.Second
	for _, how := range testkit.Stalls {
		for _, bound := range testkit.Bounds {
			t.Run(how+"/"+bound, func(t *testing.T) {
				t.Parallel() // a server of its own, and time spent waiting out a bound
				tg := testkit.Own(t)
				sem := newSemaphore(t, tg.Client(t, slow), "parked") // never set: no permit
				start := time.Now()
				done := testkit.Bounded(bound, deadline,
					func(ctx context.Context) error { return sem.Acquire(ctx, 1) },
					func(ctx context.Context, wait time.Duration) error { return sem.TryAcquire(ctx, 1, wait) })
				oneRecord(t, tg, "parked")
				resume := testkit.Stall(t, tg.Servers[0], how)
				err := testkit.ReturnsWithin(t, start, deadline+2*send.Overtime, "a parked Acquire", func() error { return <-done })
				if want := testkit.BoundedErr(bound); !errors.Is(err, want) {
					t.Fatalf("parked Acquire: %v, want %v", err, want)
				}
				resume()
				testkit.Eventually(t, 5*time.Second, func() error {
					if r := records(t, tg, "parked"); len(r) != 0 {
						return fmt.Errorf("waiter records left: %v", r)
					}
					return nil
				})
				if n := available(t, sem); n != 0 {
					t.Fatalf("%d permits available after the waiter left, want 0", n)
				}
			})
		}
	}
}

// TestFreshClientAcquireReturnsAtBound: a Client that has never acquired learns what it must of the
// server (its replicas) within the bounds of its acquisition: on a stalled server a TryAcquire with
// a wait bound returns at that bound, plus what a try sent at it is given (Overtime).
func TestFreshClientAcquireReturnsAtBound(t *testing.T) {
	const wait = time.Second
	tg := testkit.Own(t)
	sem := newSemaphore(t, tg.Client(t), "fresh")
	resume := testkit.Stall(t, tg.Servers[0], "SIGSTOP")
	defer resume()
	start := time.Now()
	err := testkit.ReturnsWithin(t, start, wait+2*send.Overtime, "a fresh Client's TryAcquire", func() error {
		return sem.TryAcquire(context.Background(), 1, wait)
	})
	if err == nil {
		t.Fatal("TryAcquire on a stalled server acquired")
	}
}
