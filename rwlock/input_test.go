package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

func TestBadInput(t *testing.T) {
	_, c := testkit.Mini(t)
	for _, tc := range []struct {
		name string
		c    *redisync.Client
		lock string
		opts []rwlock.Option
	}{
		{"nil client", nil, "x", nil},
		{"empty name", c, "", nil},
		{"negative lease", c, "x", []rwlock.Option{rwlock.WithLease(-time.Second)}},
		{"sub-millisecond lease", c, "x", []rwlock.Option{rwlock.WithLease(time.Microsecond)}},
	} {
		if _, err := rwlock.New(tc.c, tc.lock, tc.opts...); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	rw := mustNew(t, c, "x")
	for _, l := range []*rwlock.Lock{rw.ReadLock(), rw.WriteLock()} {
		if _, err := l.TryLock(context.Background(), -time.Second); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("negative wait: %v", err)
		}
		if _, err := l.Lock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck // nil ctx under test
			t.Errorf("nil ctx: %v", err)
		}
		if err := l.Unlock(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck // nil ctx under test
			t.Errorf("nil ctx: %v", err)
		}
	}
}

func TestServerErrors(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		rw := mustNew(t, tg.Client(t), "not-a-hash")
		cmd(t, rdb, "SET", "not-a-hash", "v")
		for _, l := range []*rwlock.Lock{rw.ReadLock(), rw.WriteLock()} {
			held, err := l.TryLock(ctx, time.Second)
			if err == nil || errors.Is(err, redisync.ErrNotAcquired) || held != nil {
				t.Fatalf("lock on a string key: %v, want the server's error", err)
			}
		}
		if got := str(t, rdb, "GET", "not-a-hash"); got != "v" {
			t.Fatalf("the string key was changed to %q", got)
		}
		// A hash that is no read-write lock (no mode field) is never written into, nor waited for.
		cmd(t, rdb, "DEL", "not-a-hash")
		cmd(t, rdb, "HSET", "not-a-hash", "someone", "1")
		for _, l := range []*rwlock.Lock{rw.ReadLock(), rw.WriteLock()} {
			if _, err := l.TryLock(ctx, 0); !errors.Is(err, redisync.ErrWrongType) {
				t.Fatalf("lock on a foreign hash: %v, want ErrWrongType", err)
			}
		}
		if n := num(t, rdb, "HLEN", "not-a-hash"); n != 1 {
			t.Fatalf("the foreign hash has %d fields, want 1", n)
		}
		cmd(t, rdb, "DEL", "not-a-hash")
	})
}

func TestDowngradedReadFollowsWriteParent(t *testing.T) {
	_, c := testkit.Mini(t)
	rw := mustNew(t, c, "parent")
	parent, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	w, err := rw.WriteLock().Lock(parent)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rw.ReadLock().Lock(w)
	if err != nil {
		t.Fatal(err)
	}
	// A ctx with a cancellation of its own on top of the write ctx: the write release ends it, and
	// the read hold taken with it goes on all the same.
	sub, stop := context.WithCancel(w)
	defer stop()
	nested, err := rw.ReadLock().Lock(sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.WriteLock().Unlock(w); err != nil {
		t.Fatal(err)
	}
	if r.Err() != nil {
		t.Fatalf("downgraded read ctx ended with the write unlock: %v", context.Cause(r))
	}
	if nested.Err() != nil {
		t.Fatalf("read ctx taken through a cancellable child of the write ctx ended with the write unlock: %v", context.Cause(nested))
	}
	stopped := errors.New("request over")
	cancel(stopped)
	for _, held := range []context.Context{r, nested} {
		<-held.Done()
		if !errors.Is(context.Cause(held), stopped) {
			t.Fatalf("downgraded read ctx after the write lock's parent ended: %v", context.Cause(held))
		}
	}
	if n, err := rw.ReadLock().HoldCount(context.WithoutCancel(nested)); n != 2 || err != nil {
		t.Fatalf("read holds %d, %v; want 2", n, err)
	}
	for _, held := range []context.Context{nested, r} {
		if err := rw.ReadLock().Unlock(held); err != nil {
			t.Fatal(err)
		}
	}
}
