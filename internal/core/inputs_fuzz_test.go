package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// FuzzLockInputs: any name, lease and wait given to a lock either is refused with
// ErrInvalidArgument before anything is sent, or locks and unlocks cleanly; nothing panics.
func FuzzLockInputs(f *testing.F) {
	for _, seed := range []struct {
		name        string
		lease, wait int64
	}{
		{"a", 0, 0}, {"", 0, 0}, {"{}", 1, 1}, {"a}b", int64(time.Millisecond), -1},
		{"\xff{x}", int64(time.Millisecond) - 1, int64(time.Second)}, {"x", -1, 0},
		{"y", 1<<63 - 1, 1<<63 - 1}, {"z", -1 << 63, -1 << 63}, {"锁", int64(time.Hour), 0},
	} {
		f.Add(seed.name, seed.lease, seed.wait)
	}
	_, c := testkit.Mini(f, redisync.WithWatchdogTimeout(time.Second))
	f.Fuzz(func(t *testing.T, name string, lease, wait int64) {
		l, err := rlock.New(c, name, rlock.WithLease(time.Duration(lease)))
		if err != nil {
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Fatalf("New(%q, lease %d): %v, want ErrInvalidArgument", name, lease, err)
			}
			return
		}
		held, err := l.TryLock(context.Background(), time.Duration(wait))
		if err != nil {
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Fatalf("TryLock(%q, lease %d, wait %d): %v", name, lease, wait, err)
			}
			return
		}
		if err := l.Unlock(held); err != nil {
			t.Fatalf("Unlock(%q, lease %d): %v", name, lease, err)
		}
	})
}
