package multilock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

var names3 = []string{"ml-a", "ml-b", "ml-c"}

func newMulti(t *testing.T, ls ...Locker) *MultiLock {
	t.Helper()
	m, err := New(ls...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMultiLockMutualExclusion(t *testing.T) {
	servers := startN(t, 3)
	const workers, rounds = 10, 10
	var sec testkit.Section
	var wg sync.WaitGroup
	ctx := timeout(t, 60*time.Second)
	for w := range workers {
		ls := locks(t, servers, names3)
		if w%2 == 1 {
			ls[0], ls[2] = ls[2], ls[0] // another order: must not matter
		}
		m := newMulti(t, ls...)
		wg.Go(func() {
			for range rounds {
				held, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				sec.Enter()
				time.Sleep(time.Millisecond)
				sec.Leave()
				if err := m.Unlock(held); err != nil {
					t.Error(err)
				}
				if cause := context.Cause(held); !errors.Is(cause, redisync.ErrReleased) {
					t.Errorf("ctx after Unlock ended with %v, want ErrReleased", cause)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d entries, at most %d inside at once", sec.Entries(), sec.Max())
	if sec.Max() != 1 {
		t.Fatalf("%d holders inside the section at once", sec.Max())
	}
	if sec.Entries() != workers*rounds {
		t.Fatalf("%d entries, want %d", sec.Entries(), workers*rounds)
	}
	for i, s := range servers {
		requireNoKeys(t, servers[i:i+1], names3[i])
		_ = s
	}
}

func TestMultiLockGetsNoneWhenOneIsHeld(t *testing.T) {
	servers := startN(t, 3)
	ctx := context.Background()
	m := newMulti(t, locks(t, servers, names3)...)
	other := locks(t, servers[2:], names3[2:])[0]
	otherHeld, err := other.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, wait := range []time.Duration{0, 300 * time.Millisecond} {
		start := time.Now()
		if _, err := m.TryLock(ctx, wait); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryLock(%v) while %s is held elsewhere: %v, want ErrNotAcquired", wait, names3[2], err)
		}
		if d := time.Since(start); d < wait {
			t.Fatalf("TryLock(%v) gave up after %v", wait, d)
		}
		if exists(t, servers[0], names3[0]) || exists(t, servers[1], names3[1]) {
			t.Fatalf("a failed TryLock(%v) left a sub-lock held", wait)
		}
	}
	if held, _ := other.(*rlock.Lock).IsHeld(otherHeld); !held {
		t.Fatal("the other holder lost its lock")
	}
	// Once it is free, a waiting MultiLock gets all three.
	got := make(chan error, 1)
	go func() {
		held, err := m.TryLock(ctx, 10*time.Second)
		if err == nil {
			err = m.Unlock(held)
		}
		got <- err
	}()
	// It waits for the busy lock on that lock's channel.
	testkit.Eventually(t, 10*time.Second, func() error {
		out, err := servers[2].Do("PUBSUB", "NUMSUB", "redisson_lock__channel:{"+names3[2]+"}")
		if err != nil {
			return err
		}
		if f := strings.Fields(out); len(f) != 2 || f[1] == "0" {
			return fmt.Errorf("no waiter subscribed: %q", out)
		}
		return nil
	})
	if err := other.Unlock(otherHeld); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("MultiLock not acquired after the third lock was freed")
	}
}

// Two MultiLocks over the same locks, given in opposite orders, hammer them: they must neither
// deadlock nor overlap. The second case uses one name on every server, where the order of names
// cannot help.
func TestMultiLockOrdersNoDeadlock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
	}{{"distinct names", names3}, {"same name", same("ml-same", 3)}} {
		t.Run(tc.name, func(t *testing.T) {
			servers := startN(t, 3)
			forward := locks(t, servers, tc.names)
			backward := locks(t, servers, tc.names)
			for i, j := 0, len(backward)-1; i < j; i, j = i+1, j-1 {
				backward[i], backward[j] = backward[j], backward[i]
			}
			ctx := timeout(t, 30*time.Second)
			var sec testkit.Section
			var wg sync.WaitGroup
			for _, m := range []*MultiLock{newMulti(t, forward...), newMulti(t, backward...)} {
				for range 2 {
					wg.Go(func() {
						for range 25 {
							held, err := m.Lock(ctx)
							if err != nil {
								t.Error("deadlock or failure:", err)
								return
							}
							sec.Enter()
							sec.Leave()
							if err := m.Unlock(held); err != nil {
								t.Error(err)
							}
						}
					})
				}
			}
			wg.Wait()
			if sec.Max() != 1 || sec.Entries() != 100 {
				t.Fatalf("max %d inside, %d entries; want 1 and 100", sec.Max(), sec.Entries())
			}
		})
	}
}

func TestMultiLockLostSubLockEndsHold(t *testing.T) {
	servers := startN(t, 3)
	m := newMulti(t, locks(t, servers, names3)...)
	held, err := m.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The second lock vanishes (a failover lost it, say); its watchdog notices within a third of a
	// second (watchdog timeout 1 s).
	if _, err := servers[1].Do("DEL", names3[1]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hold's ctx still alive after a sub-lock was lost")
	}
	if cause := context.Cause(held); !errors.Is(cause, redisync.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", cause)
	}
	// The other two are given back without waiting for Unlock.
	testkit.Eventually(t, 10*time.Second, func() error {
		if exists(t, servers[0], names3[0]) || exists(t, servers[2], names3[2]) {
			return errors.New("sub-locks still held after the hold was lost")
		}
		return nil
	})
	if err := m.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock after loss: %v, want ErrNotHeld", err)
	}
}

func TestMultiLockLeaseIsEarliestSubLease(t *testing.T) {
	servers := startN(t, 2)
	ls := locks(t, servers[:1], names3[:1], rlock.WithLease(400*time.Millisecond))
	ls = append(ls, locks(t, servers[1:], names3[1:2], rlock.WithLease(5*time.Second))...)
	m := newMulti(t, ls...)
	start := time.Now()
	held, err := m.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now()
	d, ok := held.Deadline()
	if !ok || d.After(acquired.Add(400*time.Millisecond)) || !d.After(start) {
		t.Fatalf("deadline %v after start (set %v), want the end of the 400ms lease", d.Sub(start), ok)
	}
	<-held.Done()
	if cause := context.Cause(held); !errors.Is(cause, redisync.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", cause)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if exists(t, servers[1], names3[1]) {
			return errors.New("the lock with the longer lease was not given back")
		}
		return nil
	})
	if err := m.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock after the lease: %v, want ErrNotHeld", err)
	}
}

func TestMultiLockOwnership(t *testing.T) {
	servers := startN(t, 2)
	m := newMulti(t, locks(t, servers, names3[:2])...)
	ctx := context.Background()
	if err := m.Unlock(ctx); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock with a plain ctx: %v", err)
	}
	outer, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Re-entry with the hold's ctx.
	inner, err := m.TryLock(outer, 0)
	if err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	// Another owner is excluded.
	if _, err := m.TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("another owner: %v, want ErrNotAcquired", err)
	}
	if err := m.Unlock(inner); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(inner); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("second Unlock of the same hold: %v, want ErrNotHeld", err)
	}
	if outer.Err() != nil || !exists(t, servers[0], names3[0]) {
		t.Fatal("the outer hold ended with the inner one")
	}
	// Unlock after the parent ctx ended still releases.
	pctx, cancel := context.WithCancel(ctx)
	if err := m.Unlock(outer); err != nil {
		t.Fatal(err)
	}
	held, err := m.Lock(pctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := m.Unlock(held); err != nil {
		t.Fatalf("Unlock after the parent was cancelled: %v", err)
	}
	requireNoKeys(t, servers, names3[0])
	requireNoKeys(t, servers, names3[1])
}

func TestBadInput(t *testing.T) {
	_, c := testkit.Mini(t)
	l, _ := rlock.New(c, "x")
	if _, err := New(); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("no locks: %v", err)
	}
	if _, err := New(l, nil); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("nil lock: %v", err)
	}
	if _, err := NewRedLock(); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("RedLock with no locks: %v", err)
	}
	if _, err := NewRedLock(l, nil); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("RedLock with a nil lock: %v", err)
	}
	r, _ := NewRedLock(l)
	for _, o := range []Option{WithInstanceTimeout(0), WithRetryDelay(-time.Second)} {
		if _, err := r.With(o); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("bad RedLock option: %v", err)
		}
	}
	m := newMulti(t, l)
	for _, x := range []Locker{m, r} {
		if _, err := x.TryLock(context.Background(), -time.Second); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("%T negative wait: %v", x, err)
		}
		//lint:ignore SA1012 a nil ctx is the bad input under test
		if _, err := x.Lock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
			t.Fatalf("%T nil ctx: %v", x, err)
		}
		//lint:ignore SA1012 a nil ctx is the bad input under test
		if err := x.Unlock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
			t.Fatalf("%T Unlock nil ctx: %v", x, err)
		}
	}
}

// Several locks of one deployment, in different cluster slots, behind one Client per process.
func TestMultiLockOnOneDeployment(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		// The default watchdog timeout: a busy machine that delays a renewal must not end a hold.
		ctx := timeout(t, time.Minute)
		var sec testkit.Section
		var wg sync.WaitGroup
		for range 4 {
			c := tg.Client(t)
			var ls []Locker
			for _, name := range []string{"ml-orders", "ml-stock", "ml-ledger"} {
				l, err := rlock.New(c, name)
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, l)
			}
			m := newMulti(t, ls...)
			wg.Go(func() {
				for range 10 {
					err := m.Do(ctx, func(context.Context) error {
						sec.Enter()
						time.Sleep(time.Millisecond)
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
		if sec.Max() != 1 || sec.Entries() != 40 {
			t.Fatalf("max %d inside, %d entries; want 1 and 40", sec.Max(), sec.Entries())
		}
	})
}
