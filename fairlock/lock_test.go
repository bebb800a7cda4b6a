package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// name gives each test (and subtest) its own lock on the shared servers.
func name(t *testing.T) string { return "fairlock:" + t.Name() }

func newLock(t *testing.T, c *redisync.Client, name string, opts ...fairlock.Option) *fairlock.Lock {
	t.Helper()
	l, err := fairlock.New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustLock(t *testing.T, l *fairlock.Lock, ctx context.Context) context.Context {
	t.Helper()
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

func mustUnlock(t *testing.T, l *fairlock.Lock, ctx context.Context) {
	t.Helper()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func waiting(t *testing.T, l *fairlock.Lock) int {
	t.Helper()
	n, err := l.Waiting(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitQueued waits until n owners are in l's queue.
func waitQueued(t *testing.T, l *fairlock.Lock, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if got := waiting(t, l); got != n {
			return fmt.Errorf("queue length %d, want %d", got, n)
		}
		return nil
	})
}

func TestInvalidArguments(t *testing.T) {
	_, c := testkit.Mini(t)
	bad := []struct {
		what string
		c    *redisync.Client
		name string
		opts []fairlock.Option
	}{
		{"nil client", nil, "x", nil},
		{"empty name", c, "", nil},
		{"negative lease", c, "x", []fairlock.Option{fairlock.WithLease(-time.Second)}},
		{"sub-millisecond lease", c, "x", []fairlock.Option{fairlock.WithLease(time.Microsecond)}},
		{"negative slot", c, "x", []fairlock.Option{fairlock.WithSlot(-time.Second)}},
		{"tiny slot", c, "x", []fairlock.Option{fairlock.WithSlot(time.Millisecond)}},
	}
	for _, b := range bad {
		if _, err := fairlock.New(b.c, b.name, b.opts...); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", b.what, err)
		}
	}
	l := newLock(t, c, "x")
	if _, err := l.TryLock(context.Background(), -time.Second); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("negative wait: got %v", err)
	}
	//lint:ignore SA1012 nil ctx is the bad input under test
	if _, err := l.Lock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("nil ctx: got %v", err)
	}
	if err := l.Unlock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("nil ctx unlock: got %v", err)
	}
}

func TestReentry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), name(t))
		ctx := context.Background()
		first := mustLock(t, l, ctx)
		second := mustLock(t, l, first)
		if n, _ := l.HoldCount(second); n != 2 {
			t.Fatalf("hold count %d, want 2", n)
		}
		mustUnlock(t, l, second)
		if n, _ := l.HoldCount(first); n != 1 {
			t.Fatalf("hold count after one unlock %d, want 1", n)
		}
		if !errors.Is(context.Cause(second), redisync.ErrReleased) || first.Err() != nil {
			t.Fatalf("after one unlock: second %v, first %v", context.Cause(second), first.Err())
		}
		if locked, _ := l.IsLocked(ctx); !locked {
			t.Fatal("lock free after one of two unlocks")
		}
		mustUnlock(t, l, first)
		if locked, _ := l.IsLocked(ctx); locked {
			t.Fatal("lock held after the last unlock")
		}
		if !errors.Is(context.Cause(first), redisync.ErrReleased) {
			t.Fatalf("cause %v, want ErrReleased", context.Cause(first))
		}
		if err := l.Unlock(first); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("extra unlock: %v, want ErrNotHeld", err)
		}
	})
}

func TestNonReentrant(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), name(t), fairlock.NonReentrant())
		held := mustLock(t, l, context.Background())
		if _, err := l.TryLock(held, time.Second); !errors.Is(err, redisync.ErrAlreadyHeld) {
			t.Fatalf("re-entry: %v, want ErrAlreadyHeld", err)
		}
		if n, _ := l.HoldCount(held); n != 1 {
			t.Fatalf("hold count %d after refused re-entry, want 1", n)
		}
		if n := waiting(t, l); n != 0 {
			t.Fatalf("refused re-entry left %d waiters", n)
		}
		mustUnlock(t, l, held)
	})
}

func TestNonOwnerUnlock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLock(t, c, name(t))
		held := mustLock(t, l, context.Background())
		other := newLock(t, tg.Client(t), name(t))
		for _, u := range []struct {
			what string
			l    *fairlock.Lock
			ctx  context.Context
		}{
			{"plain ctx", l, context.Background()},
			{"other owner", l, redisync.WithOwner(context.Background())},
			{"same owner id on another client", other, held},
		} {
			if err := u.l.Unlock(u.ctx); !errors.Is(err, redisync.ErrNotHeld) {
				t.Errorf("%s: unlock %v, want ErrNotHeld", u.what, err)
			}
		}
		if n, _ := l.HoldCount(held); n != 1 || held.Err() != nil {
			t.Fatalf("after foreign unlocks: count %d, ctx %v", n, held.Err())
		}
		mustUnlock(t, l, held)
	})
}

func TestUnlockAfterCancel(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), name(t))
		parent, cancel := context.WithCancel(context.Background())
		held := mustLock(t, l, parent)
		cancel()
		mustUnlock(t, l, held)
		if locked, _ := l.IsLocked(context.Background()); locked {
			t.Fatal("still locked")
		}
	})
}

func TestLeaseExpiry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const lease = 300 * time.Millisecond
		l := newLock(t, tg.Client(t), name(t), fairlock.WithLease(lease))
		start := time.Now()
		held := mustLock(t, l, context.Background())
		end := time.Now()
		// The lease runs from when the acquiring try was sent, less the drift allowance.
		d, ok := held.Deadline()
		if !ok || d.Before(start.Add(lease-core.Drift(lease))) || d.After(end.Add(lease-core.Drift(lease))) {
			t.Fatalf("deadline %v after Lock began (ok %v), want the lease less its drift from the try", d.Sub(start), ok)
		}
		// A busy machine may get to the TTL after the lease: the hold's own deadline has passed then.
		if ttl, _ := l.TTL(held); (ttl <= 0 && !time.Now().After(d)) || ttl > lease {
			t.Fatalf("TTL %v, want in (0, %v]", ttl, lease)
		}
		<-held.Done()
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("cause %v, want ErrLost", context.Cause(held))
		}
		testkit.Eventually(t, 5*time.Second, func() error {
			if locked, _ := l.IsLocked(context.Background()); locked {
				return errors.New("still locked after the lease")
			}
			return nil
		})
		if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("unlock after expiry: %v, want ErrNotHeld", err)
		}
	})
}

func TestWatchdogRenewsAndStops(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const timeout = time.Second
		rdb := tg.Redis(t)
		c := tg.Client(t, redisync.WithWatchdogTimeout(timeout))
		l := newLock(t, c, name(t))
		held := mustLock(t, l, context.Background())
		acquired := time.Now()
		// Renewals push the key's expiry on, past the end of the first lease (which the client counts
		// from when the acquisition was sent, before Lock returned).
		testkit.AwaitRenewals(t, rdb, l.Name(), 2)
		for time.Since(acquired) < timeout {
			testkit.AwaitRenewals(t, rdb, l.Name(), 1)
		}
		if held.Err() != nil {
			t.Fatalf("hold lost while the watchdog runs: %v", context.Cause(held))
		}
		if ttl, _ := l.TTL(held); ttl <= 0 || ttl > timeout {
			t.Fatalf("TTL %v, want in (0, %v]", ttl, timeout)
		}
		mustUnlock(t, l, held)
		if n := testkit.Renewals(c); n != 0 {
			t.Fatalf("%d holds still renewed after Unlock", n)
		}
		// A renewal round in flight at Unlock (it lasts a third of the timeout at most) finds the hold
		// gone: the lock does not come back.
		for end := time.Now().Add(timeout / 2); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if locked, _ := l.IsLocked(context.Background()); locked {
				t.Fatal("a renewal brought the lock back after Unlock")
			}
		}
	})
}

func TestWatchdogFindsItGone(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		l := newLock(t, c, name(t))
		held := mustLock(t, l, context.Background())
		testkit.Do(t, tg.Redis(t), "DEL", l.Name())
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("hold ctx not cancelled after the key was deleted")
		}
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("cause %v, want ErrLost", context.Cause(held))
		}
		if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("unlock: %v, want ErrNotHeld", err)
		}
	})
}

func TestMutualExclusion(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		var sec testkit.Section
		var wg sync.WaitGroup
		const clients, rounds = 6, 20
		for i := 0; i < clients; i++ {
			l := newLock(t, tg.Client(t), name(t))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < rounds; j++ {
					err := l.Do(context.Background(), func(ctx context.Context) error {
						sec.Enter()
						defer sec.Leave()
						time.Sleep(200 * time.Microsecond)
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if sec.Max() != 1 || sec.Entries() != clients*rounds {
			t.Fatalf("max %d inside (want 1), %d entries (want %d)", sec.Max(), sec.Entries(), clients*rounds)
		}
		if n := waiting(t, newLock(t, tg.Client(t), name(t))); n != 0 {
			t.Fatalf("%d waiters left in the queue", n)
		}
	})
}

func TestDoReturnsErrors(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), name(t))
		boom := errors.New("boom")
		err := l.Do(context.Background(), func(ctx context.Context) error {
			if ok, _ := l.IsHeld(ctx); !ok {
				t.Error("not held inside Do")
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Do: %v, want boom", err)
		}
		if locked, _ := l.IsLocked(context.Background()); locked {
			t.Fatal("Do left the lock held")
		}
	})
}

func TestFencing(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), name(t), fairlock.WithFencing())
		a := mustLock(t, l, context.Background())
		b := mustLock(t, l, a)
		ta, _ := l.Token(a)
		tb, ok := l.Token(b)
		if !ok || tb <= ta {
			t.Fatalf("tokens %d then %d, want growing", ta, tb)
		}
		mustUnlock(t, l, b)
		mustUnlock(t, l, a)
		c := mustLock(t, l, context.Background())
		if tc, _ := l.Token(c); tc <= tb {
			t.Fatalf("token %d after %d", tc, tb)
		}
		mustUnlock(t, l, c)
		testkit.Do(t, tg.Redis(t), "DEL", "redisson_lock_token:{"+l.Name()+"}")
	})
}

func TestSingleTryNeverQueues(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLock(t, c, name(t))
		held := mustLock(t, l, context.Background())
		if _, err := l.TryLock(context.Background(), 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("try on a held lock: %v, want ErrNotAcquired", err)
		}
		if n := waiting(t, l); n != 0 {
			t.Fatalf("a single try joined the queue (%d waiters)", n)
		}
		mustUnlock(t, l, held)

		// Free, but somebody is in line: a single try must not jump the queue.
		rdb := tg.Redis(t)
		queue, timeout := "redisson_lock_queue:{"+l.Name()+"}", "redisson_lock_timeout:{"+l.Name()+"}"
		testkit.Do(t, rdb, "RPUSH", queue, "someone:1")
		testkit.Do(t, rdb, "ZADD", timeout, "99999999999999", "someone:1")
		defer testkit.Do(t, rdb, "DEL", queue, timeout)
		if _, err := l.TryLock(context.Background(), 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("try past a waiter: %v, want ErrNotAcquired", err)
		}
	})
}

func TestWrongTypeIsAnError(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), name(t))
		rdb := tg.Redis(t)
		testkit.Do(t, rdb, "SET", l.Name(), "not a hash")
		defer testkit.Do(t, rdb, "DEL", l.Name())
		held, err := l.TryLock(context.Background(), 200*time.Millisecond)
		if err == nil || held != nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("got (%v, %v), want a WRONGTYPE error", held, err)
		}
		if n := waiting(t, l); n != 0 {
			t.Fatalf("%d waiters left", n)
		}
	})
}
