package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
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
		if err == nil || held != nil || !errors.Is(err, redisync.ErrWrongType) {
			t.Fatalf("got (%v, %v), want ErrWrongType", held, err)
		}
		if n := testkit.DoString(t, rdb, "LLEN", "redisson_lock_queue:{"+l.Name()+"}"); n != "0" {
			t.Fatalf("%s waiters left", n)
		}
	})
}
