package rlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func TestBadArguments(t *testing.T) {
	_, c := testkit.Mini(t)
	for name, mk := range map[string]func() (*rlock.Lock, error){
		"nil client":     func() (*rlock.Lock, error) { return rlock.New(nil, "x") },
		"empty name":     func() (*rlock.Lock, error) { return rlock.New(c, "") },
		"negative lease": func() (*rlock.Lock, error) { return rlock.New(c, "x", rlock.WithLease(-time.Second)) },
		"sub-ms lease":   func() (*rlock.Lock, error) { return rlock.New(c, "x", rlock.WithLease(time.Microsecond)) },
	} {
		if l, err := mk(); !errors.Is(err, redisync.ErrInvalidArgument) || l != nil {
			t.Errorf("%s: got (%v, %v), want ErrInvalidArgument", name, l, err)
		}
	}
	if _, err := redisync.Wrap(nil); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("Wrap(nil) = %v, want ErrInvalidArgument", err)
	}
	l := newLock(t, c, "x")
	if _, err := l.TryLock(context.Background(), -time.Second); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("negative wait: %v, want ErrInvalidArgument", err)
	}
	//lint:ignore SA1012 a nil ctx must be refused, not panic
	if _, err := l.Lock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("nil ctx: %v, want ErrInvalidArgument", err)
	}
	if locked, _ := l.IsLocked(context.Background()); locked {
		t.Error("bad input left the lock taken")
	}
}

func TestWrongType(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		testkit.Do(t, rdb, "SET", "wrongtype", "a string")
		l := newLock(t, tg.Client(t), "wrongtype")
		for _, try := range []func() (context.Context, error){
			func() (context.Context, error) { return l.TryLock(context.Background(), 0) },
			func() (context.Context, error) { return l.TryLock(context.Background(), 100*time.Millisecond) },
		} {
			held, err := try()
			if err == nil || held != nil || !errors.Is(err, redisync.ErrWrongType) {
				t.Fatalf("lock on a string key: (%v, %v), want ErrWrongType", held, err)
			}
		}
		if v := testkit.DoString(t, rdb, "GET", "wrongtype"); v != "a string" {
			t.Fatalf("the foreign key was changed to %q", v)
		}
	})
}

func TestServerDown(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t)
	l := newLock(t, c, "down")
	tg.Servers[0].Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if held, err := l.Lock(ctx); err == nil || held != nil {
		t.Fatalf("Lock on a dead server: (%v, %v), want an error", held, err)
	}
	if held, err := l.TryLock(context.Background(), 0); err == nil || held != nil {
		t.Fatalf("TryLock on a dead server: (%v, %v), want an error", held, err)
	}
	if err := l.Unlock(redisync.WithOwner(context.Background())); err == nil {
		t.Fatal("Unlock on a dead server: no error")
	}
	// Queries are read-only, which rueidis retries until ctx ends: they follow ctx.
	qctx, qcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer qcancel()
	if _, err := l.IsLocked(qctx); err == nil {
		t.Fatal("IsLocked on a dead server: no error")
	}
	// The server comes back: the same client works again.
	if err := tg.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() error {
		held, err := l.TryLock(context.Background(), 0)
		if err == nil {
			err = l.Unlock(held)
		}
		return err
	})
}

func TestScriptFlush(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "flushed")
		mustUnlock(t, l, mustLock(t, l, context.Background()))
		for _, s := range tg.Servers {
			if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		held := mustLock(t, l, context.Background()) // EVALSHA gets NOSCRIPT, EVAL follows
		mustUnlock(t, l, held)
	})
}

func TestCloseEndsWaitersAndHolders(t *testing.T) {
	tg := testkit.Standalone(t)
	holder := newLock(t, tg.Client(t), "close-waiters")
	held := mustLock(t, holder, context.Background())
	c := tg.Client(t)
	l := newLock(t, c, "close-waiters")
	got := make(chan error, 1)
	go func() {
		_, err := l.Lock(context.Background())
		got <- err
	}()
	parked(t, c, "close-waiters")
	c.Close()
	select {
	case err := <-got:
		if !errors.Is(err, redisync.ErrClosed) {
			t.Fatalf("waiter returned %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter still waiting after Close")
	}
	if _, err := l.Lock(context.Background()); !errors.Is(err, redisync.ErrClosed) {
		t.Fatalf("Lock after Close = %v, want ErrClosed", err)
	}
	mustUnlock(t, holder, held)
}

func TestContextSemantics(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "ctx")

		// Two goroutines from the same plain ctx are two owners.
		base := context.Background()
		a := mustLock(t, l, base)
		if _, err := l.TryLock(base, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("a second plain ctx shared the hold: %v", err)
		}

		// Unlock after the parent was cancelled still releases.
		parent, cancel := context.WithCancel(context.Background())
		mustUnlock(t, l, a)
		held := mustLock(t, l, parent)
		cancel()
		if !errors.Is(context.Cause(held), context.Canceled) {
			t.Fatalf("hold ctx cause %v after the parent was cancelled", context.Cause(held))
		}
		mustUnlock(t, l, held)
		if locked, _ := l.IsLocked(context.Background()); locked {
			t.Fatal("Unlock with a cancelled ctx did not release")
		}

		// A ctx cancelled while waiting gives up with its cause and leaves nothing behind.
		holder := mustLock(t, l, context.Background())
		wctx, wcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer wcancel()
		if _, err := l.Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiting Lock returned %v, want DeadlineExceeded", err)
		}
		mustUnlock(t, l, holder)

		// Do runs fn under the lock and returns its error.
		boom := errors.New("boom")
		err := l.Do(context.Background(), func(ctx context.Context) error {
			if ok, _ := l.IsHeld(ctx); !ok {
				t.Error("fn runs without the lock")
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Do = %v, want fn's error", err)
		}
		if locked, _ := l.IsLocked(context.Background()); locked {
			t.Fatal("Do left the lock held")
		}
	})
}

func TestForceUnlock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLock(t, c, "forced")
		held := mustLock(t, l, context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		oc := tg.Client(t, slow)
		other := newLock(t, oc, "forced")
		go func() {
			defer wg.Done()
			h, err := other.TryLock(context.Background(), 20*time.Second)
			if err != nil {
				t.Errorf("waiter not woken by the forced unlock: %v", err)
				return
			}
			other.Unlock(h)
		}()
		parked(t, oc, "forced")
		ok, err := l.ForceUnlock(context.Background())
		if err != nil || !ok {
			t.Fatalf("ForceUnlock = %v, %v", ok, err)
		}
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("holder ctx cause %v, want ErrLost", context.Cause(held))
		}
		wg.Wait()
		if ok, err := l.ForceUnlock(context.Background()); ok || err != nil {
			t.Fatalf("ForceUnlock of a free lock = %v, %v; want false", ok, err)
		}
	})
}

func TestMiniredisQuick(t *testing.T) {
	m, c := testkit.Mini(t, redisync.WithWatchdogTimeout(time.Second))
	l := newLock(t, c, "mini", rlock.WithLease(2*time.Second))
	held := mustLock(t, l, context.Background())
	m.FastForward(3 * time.Second) // the lease runs out in the server
	other := newLock(t, c, "mini")
	h2, err := other.TryLock(context.Background(), 0)
	if err != nil {
		t.Fatalf("lease did not expire on the server: %v", err)
	}
	if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("expired holder's Unlock = %v, want ErrNotHeld", err)
	}
	mustUnlock(t, other, h2)
}
