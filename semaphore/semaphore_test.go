package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

func newSemaphore(t testing.TB, c *redisync.Client, name string) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func available(t testing.TB, s interface {
	Available(context.Context) (int64, error)
}) int64 {
	t.Helper()
	n, err := s.Available(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Redisson's RSemaphore contract: the count after each operation, as the key holds it.
func TestSemaphoreCounts(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("counts")
		s := newSemaphore(t, tg.Client(t), name)
		raw := func() string { return get(t, rdb, name) }
		step := func(what string, err error, want int64) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := available(t, s); got != want {
				t.Fatalf("after %s: %d available, want %d", what, got, want)
			}
			if got := raw(); got != fmt.Sprint(want) {
				t.Fatalf("after %s: key holds %q, want %d", what, got, want)
			}
		}

		if n := available(t, s); n != 0 {
			t.Fatalf("unset semaphore has %d permits", n)
		}
		if n, err := s.Drain(ctx); err != nil || n != 0 {
			t.Fatalf("Drain of unset semaphore = %d, %v; want 0", n, err)
		}
		if exists(t, rdb, name) {
			t.Fatal("Drain created the key of an unset semaphore")
		}
		ok, err := s.TrySetPermits(ctx, 3)
		if !ok {
			t.Fatal("TrySetPermits on an unset semaphore did not set")
		}
		step("TrySetPermits(3)", err, 3)
		ok, err = s.TrySetPermits(ctx, 5)
		if ok {
			t.Fatal("TrySetPermits on a set semaphore set it again")
		}
		step("second TrySetPermits", err, 3)
		step("TryAcquire(2)", s.TryAcquire(ctx, 2, 0), 1)
		if err := s.TryAcquire(ctx, 2, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryAcquire(2) with 1 available: %v, want ErrNotAcquired", err)
		}
		step("failed TryAcquire", nil, 1)
		step("AddPermits(-3)", s.AddPermits(ctx, -3), -2)
		if err := s.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryAcquire(1) with -2 available: %v, want ErrNotAcquired", err)
		}
		step("Release(3)", s.Release(ctx, 3), 1)
		n, err := s.Drain(ctx)
		if n != 1 {
			t.Fatalf("Drain returned %d, want 1", n)
		}
		step("Drain", err, 0)
		step("AddPermits(4)", s.AddPermits(ctx, 4), 4)
		step("Release beyond the start", s.Release(ctx, 10), 14)
	})
}

// Every change that can let a waiter through announces the new count on Redisson's channel; Drain,
// which lets nobody through, announces nothing (and, as Redisson's, sets a negative count to 0).
func TestSemaphoreMessages(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("messages")
		got := listen(t, tg, tg.Redis(t), name)
		s := newSemaphore(t, tg.Client(t), name)
		for _, err := range []error{
			must(s.TrySetPermits(ctx, 2)),
			s.TryAcquire(ctx, 2, 0),
			s.Release(ctx, 1),
			s.AddPermits(ctx, 4),
			s.AddPermits(ctx, -6),
			must(s.Drain(ctx)),
			s.Release(ctx, 3),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"2", "1", "5", "-1", "3"}
		testkit.Eventually(t, 5*time.Second, func() error {
			if g := got(); !slices.Equal(g, want) {
				return fmt.Errorf("messages %q, want %q", g, want)
			}
			return nil
		})
	})
}

func must[T any](_ T, err error) error { return err }

// A count written by hand, as a Java process would, is the same semaphore; a Java release (INCRBY and
// the new count on the channel) wakes a Go waiter.
func TestSemaphoreJavaInterop(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("java")
		testkit.Do(t, rdb, "SET", name, "2")
		c, spy := spied(t, tg, isAcquireOf(t, name), redisync.WithRecheckInterval(time.Minute))
		s := newSemaphore(t, c, name)
		if err := s.TryAcquire(ctx, 2, 0); err != nil {
			t.Fatalf("TryAcquire(2) of a count of 2 set by hand: %v", err)
		}
		if v := get(t, rdb, name); v != "0" {
			t.Fatalf("key holds %q after taking both permits, want 0", v)
		}
		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		// The waiter has tried once, subscribed, and tried again: from now on only a message or the
		// recheck interval (a minute) brings it back.
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := spy.calls.Load(); n < 3 {
				return fmt.Errorf("%d tries", n)
			}
			return nil
		})
		testkit.Do(t, rdb, "INCRBY", name, "1")
		publish(t, tg, rdb, name, "1")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Java-style release did not wake the waiter")
		}
		if v := get(t, rdb, name); v != "0" {
			t.Fatalf("key holds %q, want 0", v)
		}
	})
}

// isAcquireOf matches the counting semaphore's acquire script on name.
func isAcquireOf(t testing.TB, name string) func([]string) bool {
	sha := scriptSHA(t, "semaphore_acquire.lua")
	return func(args []string) bool { return args[1] == sha && len(args) > 3 && args[3] == name }
}

// With P permits and 4P goroutines on several Clients, never more than P are inside, and everyone
// gets through.
func TestSemaphoreBound(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		for _, permits := range []int64{1, 3, 8} {
			t.Run(fmt.Sprint(permits), func(t *testing.T) {
				ctx := context.Background()
				name := unique("{bound}")
				clients := make([]*redisync.Client, 4)
				for i := range clients {
					clients[i] = tg.Client(t)
				}
				if ok, err := newSemaphore(t, clients[0], name).TrySetPermits(ctx, permits); !ok || err != nil {
					t.Fatalf("TrySetPermits: %v %v", ok, err)
				}
				var sec testkit.Section
				var wg sync.WaitGroup
				const rounds = 4
				for g := range 4 * permits {
					s := newSemaphore(t, clients[g%4], name)
					wg.Go(func() {
						for range rounds {
							err := s.Do(ctx, 1, func(context.Context) error {
								sec.Enter()
								time.Sleep(2 * time.Millisecond)
								sec.Leave()
								return nil
							})
							if err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if sec.Max() > permits {
					t.Fatalf("%d holders inside at once with %d permits", sec.Max(), permits)
				}
				if want := 4 * permits * rounds; sec.Entries() != want {
					t.Fatalf("%d entries, want %d", sec.Entries(), want)
				}
				if n := available(t, newSemaphore(t, clients[0], name)); n != permits {
					t.Fatalf("%d permits available at the end, want %d", n, permits)
				}
				t.Logf("max %d inside with %d permits", sec.Max(), permits)
			})
		}
	})
}

// A release of 3 wakes a waiter asking for 2 and one asking for 1, on the same Client and on another
// one, by notification: the recheck interval is a minute.
func TestSemaphoreReleaseWakesByCount(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("wake")
		c1 := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		c2 := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		releaser := newSemaphore(t, tg.Client(t), name)
		done := make(chan error, 4)
		for _, w := range []struct {
			c *redisync.Client
			n int64
		}{{c1, 2}, {c1, 1}, {c2, 2}, {c2, 1}} {
			s := newSemaphore(t, w.c, name)
			go func() { done <- s.Acquire(ctx, w.n) }()
		}
		testkit.Eventually(t, 5*time.Second, func() error {
			if a, b := waiting(c1, name), waiting(c2, name); a != 2 || b != 2 {
				return fmt.Errorf("%d and %d waiting", a, b)
			}
			return nil
		})
		time.Sleep(100 * time.Millisecond) // let both finish the try after subscribing
		start := time.Now()
		if err := releaser.Release(ctx, 3); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a release of 3 did not let waiters for 2 and 1 through")
			}
		}
		if err := releaser.Release(ctx, 3); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the second release of 3 did not let the other waiters through")
			}
		}
		t.Logf("four waiters through %v after the first release", time.Since(start))
		if n := available(t, releaser); n != 0 {
			t.Fatalf("%d available, want 0", n)
		}
	})
}

// A release of one permit hands it to one of three waiters and wakes none of the others: no try is
// made at all.
func TestSemaphoreReleaseWakesNoMore(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		name := unique("few")
		c, spy := spied(t, tg, isAcquireOf(t, name), redisync.WithRecheckInterval(time.Minute))
		releaser := newSemaphore(t, tg.Client(t), name)
		done := make(chan error, 3)
		// The first waiter tries once, subscribes, and tries again once subscribed; one that registers
		// while the channel is already subscribed tries once only. One after the other, each waits with
		// a known number of tries made: 2, 3, 4.
		for i := range 3 {
			s := newSemaphore(t, c, name)
			go func() { done <- s.Acquire(ctx, 1) }()
			testkit.Eventually(t, 10*time.Second, func() error {
				if w, n := waiting(c, name), spy.calls.Load(); w != i+1 || n != int64(i+2) {
					return fmt.Errorf("%d waiting after %d tries, want %d after %d", w, n, i+1, i+2)
				}
				return nil
			})
		}
		before := spy.calls.Load()
		if err := releaser.Release(ctx, 1); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a release of 1 woke nobody")
		}
		time.Sleep(300 * time.Millisecond)
		if n := spy.calls.Load(); n != before {
			t.Fatalf("a release of 1 permit caused %d tries among 3 waiters, want none", n-before)
		}
		if w := waiting(c, name); w != 2 {
			t.Fatalf("%d waiting after one was handed the permit, want 2", w)
		}
		cancel()
		for range 2 {
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("waiter ended with %v, want context.Canceled", err)
			}
		}
	})
}

// Permits taken by a try that finishes after the caller's ctx ended are given back as soon as it does.
func TestSemaphoreAcquireAfterCancelGivesBack(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		name := unique("undo")
		c, spy := spied(t, tg, isAcquireOf(t, name))
		s := newSemaphore(t, c, name)
		if err := s.AddPermits(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		spy.onCall(cancel) // the ctx ends while the acquiring script runs
		err := s.Acquire(ctx, 2)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire whose ctx ended meanwhile: %v, want context.Canceled", err)
		}
		if spy.calls.Load() != 1 {
			t.Fatalf("%d tries, want 1", spy.calls.Load())
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := available(t, s); n != 2 {
				return fmt.Errorf("%d available after the acquisition was given back, want 2", n)
			}
			return nil
		})
	})
}

// A wait bound passes with ErrNotAcquired; a ctx ending stops the wait; both leave no subscription.
func TestSemaphoreWaitEnds(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		s := newSemaphore(t, c, unique("bound"))
		start := time.Now()
		err := s.TryAcquire(context.Background(), 1, 200*time.Millisecond)
		if !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryAcquire with nothing available: %v, want ErrNotAcquired", err)
		}
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Fatalf("gave up after %v, before the wait bound of 200ms", d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := s.Acquire(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire past its ctx: %v, want DeadlineExceeded", err)
		}
		other := tg.Client(t)
		done := make(chan error, 1)
		go func() { done <- newSemaphore(t, other, s.Name()).Acquire(context.Background(), 1) }()
		testkit.Eventually(t, 5*time.Second, func() error {
			if waiting(other, s.Name()) != 1 {
				return errors.New("not waiting")
			}
			return nil
		})
		other.Close()
		select {
		case err := <-done:
			if !errors.Is(err, redisync.ErrClosed) {
				t.Fatalf("waiter of a closed Client: %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("closing the Client did not end its waiter")
		}
	})
}

// Bad input is refused before anything is sent; a key that is not a count is an error, never a
// success.
func TestSemaphoreBadInput(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		c := tg.Client(t)
		rdb := tg.Redis(t)
		if _, err := semaphore.New(nil, "x"); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("nil client: %v", err)
		}
		if _, err := semaphore.New(c, ""); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("empty name: %v", err)
		}
		name := unique("bad")
		s := newSemaphore(t, c, name)
		var nilCtx context.Context
		for what, err := range map[string]error{
			"Acquire(-1)":         s.Acquire(ctx, -1),
			"TryAcquire wait -1s": s.TryAcquire(ctx, 1, -time.Second),
			"Release(-2)":         s.Release(ctx, -2),
			"TrySetPermits(-1)":   must(s.TrySetPermits(ctx, -1)),
			"nil ctx Acquire":     s.Acquire(nilCtx, 1),
			"nil ctx Release":     s.Release(nilCtx, 1),
			"nil ctx Available":   must(s.Available(nilCtx)),
			"nil ctx Drain":       must(s.Drain(nilCtx)),
			"nil ctx AddPermits":  s.AddPermits(nilCtx, 1),
			"AddPermits(0)":       s.AddPermits(ctx, 0),
		} {
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
			}
		}
		if exists(t, rdb, name) {
			t.Fatal("refused calls wrote the key")
		}

		testkit.Do(t, rdb, "HSET", name, "f", "1")
		testkit.Do(t, rdb, "SET", name+"-text", "many")
		text := newSemaphore(t, c, name+"-text")
		for what, err := range map[string]error{
			"TryAcquire on a hash": s.TryAcquire(ctx, 1, 0),
			"Release on a hash":    s.Release(ctx, 1),
			"Available of a hash":  must(s.Available(ctx)),
			"Drain of a hash":      must(s.Drain(ctx)),
			"TryAcquire on text":   text.TryAcquire(ctx, 1, 0),
			"Acquire on text":      text.Acquire(ctx, 1),
			"Drain of text":        must(text.Drain(ctx)),
			"Release on text":      text.Release(ctx, 1),
		} {
			if err == nil || errors.Is(err, redisync.ErrNotAcquired) {
				t.Errorf("%s: %v, want a Redis error", what, err)
			}
		}
		if v := get(t, rdb, name+"-text"); v != "many" {
			t.Fatalf("failed calls changed the key to %q", v)
		}
	})
}
