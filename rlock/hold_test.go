package rlock_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// A hold whose ctx is dropped without Unlock stops being renewed, so that the lock expires, and the
// Client says so.
func TestForgottenHoldStopsRenewing(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		var logs syncBuffer
		c := tg.Client(t, redisync.WithWatchdogTimeout(time.Second),
			redisync.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		l := newLock(t, c, "forgotten")
		func() {
			if _, err := l.Lock(context.Background()); err != nil {
				t.Fatal(err)
			}
		}() // the hold's ctx is dropped here
		testkit.Eventually(t, 20*time.Second, func() error {
			runtime.GC()
			if n := testkit.Renewals(c); n != 0 {
				return fmt.Errorf("%d holds still renewed", n)
			}
			return nil
		})
		testkit.Eventually(t, 10*time.Second, func() error {
			if locked, err := l.IsLocked(context.Background()); err != nil || locked {
				return fmt.Errorf("the forgotten lock is still held (%v)", err)
			}
			return nil
		})
		if !bytes.Contains(logs.Bytes(), []byte("without Unlock")) || !bytes.Contains(logs.Bytes(), []byte("forgotten")) {
			t.Fatalf("the Client did not report the forgotten hold; log: %q", logs.Bytes())
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// A holder that keeps only its hold's Done channel (it waits for the loss) is told when the lease may
// have ended, not before: the dropped ctx stops the renewals, and the lock is held until it expires.
func TestHoldKeptOnlyByDoneEndsWithItsLease(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t, redisync.WithWatchdogTimeout(2*time.Second), redisync.WithLogger(slog.New(slog.NewTextHandler(&syncBuffer{}, nil))))
	l := newLock(t, c, "done-only")
	other := newLock(t, tg.Client(t), "done-only")
	start := time.Now() // the lease counts from the acquiring command, sent after this
	done := func() <-chan struct{} { return mustLock(t, l, context.Background()).Done() }()
	for range 3 {
		runtime.GC()
	}
	if h, err := other.TryLock(context.Background(), 0); err == nil {
		mustUnlock(t, other, h)
		t.Fatal("another owner acquired while the dropped hold's lease was running")
	}
	select {
	case <-done:
		if time.Since(start) < 2*time.Second-testkit.Drift(2*time.Second) {
			t.Fatalf("Done fired %v after Lock, before the 2s lease could end", time.Since(start))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Done never fired for a hold that is no longer renewed")
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if locked, err := l.IsLocked(context.Background()); err != nil || locked {
			return fmt.Errorf("the lock is still held (%v)", err)
		}
		return nil
	})
}
