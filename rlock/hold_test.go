package rlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func pttl(t *testing.T, tg *testkit.Target, key string) time.Duration {
	t.Helper()
	ms, err := strconv.ParseInt(testkit.DoString(t, tg.Redis(t), "PTTL", key), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ms) * time.Millisecond
}

// a re-entry with a shorter lease must not cut short what the outer hold was promised,
// and the inner hold's ctx ends with its own lease.
func TestReentryWithShorterLeaseKeepsOuterLease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		long := newLock(t, c, "short-reentry", rlock.WithLease(20*time.Second))
		short := newLock(t, c, "short-reentry", rlock.WithLease(time.Second))
		other := newLock(t, tg.Client(t), "short-reentry")

		outer := mustLock(t, long, context.Background())
		inner := mustLock(t, short, outer)
		if d := pttl(t, tg, "short-reentry"); d < 10*time.Second {
			t.Fatalf("PTTL after a re-entry with a 1s lease is %v: the outer hold's 20s lease was cut short", d)
		}
		outerEnd, _ := outer.Deadline()
		innerEnd, ok := inner.Deadline()
		if !ok || innerEnd.After(outerEnd) || time.Until(innerEnd) > time.Second {
			t.Fatalf("inner hold's deadline %v away, want at most its own 1s lease", time.Until(innerEnd))
		}
		<-inner.Done() // the inner lease has ended: the outer hold must still exclude others
		if !errors.Is(context.Cause(inner), redisync.ErrLost) {
			t.Fatalf("inner ctx cause %v, want ErrLost", context.Cause(inner))
		}
		if outer.Err() != nil {
			t.Fatalf("outer hold ended with the inner lease: %v", context.Cause(outer))
		}
		if h, err := other.TryLock(context.Background(), 0); err == nil {
			mustUnlock(t, other, h)
			t.Fatal("another owner acquired while the outer hold's lease was still running")
		}
		mustUnlock(t, short, inner)
		if d := pttl(t, tg, "short-reentry"); d < 10*time.Second {
			t.Fatalf("PTTL after releasing the inner hold is %v: the outer lease was cut short", d)
		}
		mustUnlock(t, long, outer)
	})
}

// The same with the outer hold kept by the watchdog: neither the re-entry nor its release may bring
// the lock's TTL below the watchdog's.
func TestReentryWithShorterLeaseUnderWatchdog(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t, redisync.WithWatchdogTimeout(20*time.Second))
		kept := newLock(t, c, "short-reentry-wd")
		short := newLock(t, c, "short-reentry-wd", rlock.WithLease(500*time.Millisecond))
		outer := mustLock(t, kept, context.Background())
		inner := mustLock(t, short, outer)
		if d := pttl(t, tg, "short-reentry-wd"); d < 10*time.Second {
			t.Fatalf("PTTL after a re-entry with a 500ms lease is %v, want the watchdog's 20s kept", d)
		}
		<-inner.Done()
		mustUnlock(t, short, inner)
		if d := pttl(t, tg, "short-reentry-wd"); d < 10*time.Second {
			t.Fatalf("PTTL after the inner release is %v, want the watchdog's 20s kept", d)
		}
		if outer.Err() != nil {
			t.Fatalf("outer hold ended: %v", context.Cause(outer))
		}
		mustUnlock(t, kept, outer)
	})
}

// Goroutines fanned out from one held ctx re-enter in turn: never two inside at once.
func TestFanOutFromHeldCtxTakesTurns(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "fan-out")
		held := mustLock(t, l, context.Background())
		var sec testkit.Section
		var counter racyCounter
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					inner, err := l.Lock(held)
					if err != nil {
						errs <- err
						return
					}
					sec.Enter()
					counter.incr()
					sec.Leave()
					if err := l.Unlock(inner); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if sec.Max() != 1 || counter.v != 40 {
			t.Fatalf("fan-out: %d inside at once, counter %d of 40", sec.Max(), counter.v)
		}
		if n, _ := l.HoldCount(held); n != 1 {
			t.Fatalf("hold count after the fan-out %d, want 1", n)
		}
		mustUnlock(t, l, held)
	})
}

func TestRecursionTenDeep(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "recursion")
		var step func(ctx context.Context, depth int)
		step = func(ctx context.Context, depth int) {
			held := mustLock(t, l, ctx)
			if n, err := l.HoldCount(held); err != nil || n != depth {
				t.Fatalf("depth %d: hold count %d (%v)", depth, n, err)
			}
			if depth < 10 {
				step(held, depth+1)
			}
			mustUnlock(t, l, held)
			if !errors.Is(context.Cause(held), redisync.ErrReleased) {
				t.Fatalf("depth %d: ctx cause %v after Unlock", depth, context.Cause(held))
			}
			if ctx.Err() != nil {
				t.Fatalf("depth %d: the release ended the outer ctx: %v", depth, context.Cause(ctx))
			}
		}
		step(context.Background(), 1)
		if locked, _ := l.IsLocked(context.Background()); locked {
			t.Fatal("lock still held after the recursion unwound")
		}
	})
}

func TestUnlockOutOfOrder(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "out-of-order")
		outer := mustLock(t, l, context.Background())
		inner := mustLock(t, l, outer)
		if err := l.Unlock(outer); !errors.Is(err, redisync.ErrNotInnermost) {
			t.Fatalf("Unlock of the outer hold first = %v, want ErrNotInnermost", err)
		}
		if n, _ := l.HoldCount(outer); n != 2 || outer.Err() != nil || inner.Err() != nil {
			t.Fatalf("the refused Unlock changed something: count %d, outer %v, inner %v", n, outer.Err(), inner.Err())
		}
		mustUnlock(t, l, inner)
		if inner.Err() == nil || outer.Err() != nil {
			t.Fatalf("Unlock(inner) must end exactly the inner ctx: inner %v, outer %v", inner.Err(), outer.Err())
		}
		if err := l.Unlock(inner); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("second Unlock(inner) = %v, want ErrNotHeld", err)
		}
		if n, _ := l.HoldCount(outer); n != 1 {
			t.Fatalf("a second Unlock of the inner hold released the outer one: count %d", n)
		}
		mustUnlock(t, l, outer)
	})
}

// A goroutine holding an outer hold's ctx waits in the process, with no command, until the holds
// above it are released; its wait bound and its ctx end that wait.
func TestInProcessWaitBounds(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "in-process")
		outer := mustLock(t, l, context.Background())
		inner := mustLock(t, l, outer)
		before := tg.Calls(t, "evalsha", "eval")
		if _, err := l.TryLock(outer, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryLock(outer, 0) with an inner hold open = %v, want ErrNotAcquired", err)
		}
		if _, err := l.TryLock(outer, 50*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryLock(outer, 50ms) = %v, want ErrNotAcquired", err)
		}
		ctx, cancel := context.WithCancelCause(outer)
		cause := errors.New("gave up")
		got := testkit.Background(func() (context.Context, error) { return l.Lock(ctx) })
		cancel(cause)
		if a := <-got; !errors.Is(a.Err, cause) {
			t.Fatalf("Lock with a cancelled ctx = %v, want its cause", a.Err)
		}
		if n := tg.Calls(t, "evalsha", "eval"); n != before {
			t.Fatalf("waiting for an inner hold sent %d scripts, want none", n-before)
		}
		// Released, the inner hold lets a waiter of the outer ctx in.
		waiting := testkit.Background(func() (context.Context, error) { return l.Lock(outer) })
		mustUnlock(t, l, inner)
		again := testkit.Await(t, waiting, "re-entry after the inner release")
		mustUnlock(t, l, again)
		mustUnlock(t, l, outer)
	})
}

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
		cc := core.Of(c)
		testkit.Eventually(t, 20*time.Second, func() error {
			runtime.GC()
			if _, n := cc.Pending(); n != 0 {
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
		if time.Since(start) < 2*time.Second-core.Drift(2*time.Second) {
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
