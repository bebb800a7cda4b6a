package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// Acquiring and releasing 0 permits is a no-op that succeeds, as in Redisson, the JDK and x/sync,
// on a semaphore that was never set too: no script is sent and no key written. An ended ctx still
// fails an acquisition, as it does in x/sync.
func TestZeroPermitsAreANoOp(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		c, spy := spied(t, tg, func([]string) bool { return true })
		name := unique("zero")
		s := newSemaphore(t, c, name)
		e := newExpirable(t, c, name+"-expirable")
		ran := false
		for what, err := range map[string]error{
			"Acquire(0)":              s.Acquire(ctx, 0),
			"TryAcquire(0, 0)":        s.TryAcquire(ctx, 0, 0),
			"TryAcquire(0, 1s)":       s.TryAcquire(ctx, 0, time.Second),
			"Release(0)":              s.Release(ctx, 0),
			"Do(0)":                   s.Do(ctx, 0, func(context.Context) error { ran = true; return nil }),
			"expirable Release()":     e.Release(ctx),
			"expirable Acquire(0)":    zeroIDs(e.Acquire(ctx, 0)),
			"expirable TryAcquire(0)": zeroIDs(e.TryAcquire(ctx, 0, time.Second)),
		} {
			if err != nil {
				t.Errorf("%s: %v, want nil", what, err)
			}
		}
		if !ran {
			t.Error("Do(0) did not run its function")
		}
		ended, cancel := context.WithCancel(ctx)
		cancel()
		for what, err := range map[string]error{
			"Acquire(0)":           s.Acquire(ended, 0),
			"TryAcquire(0, 0)":     s.TryAcquire(ended, 0, 0),
			"expirable Acquire(0)": must(e.Acquire(ended, 0)),
		} {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s with an ended ctx: %v, want context.Canceled", what, err)
			}
		}
		if err := s.Release(ended, 0); err != nil {
			t.Errorf("Release(0) with an ended ctx: %v, want nil", err)
		}
		if n := spy.calls.Load(); n != 0 {
			t.Errorf("%d scripts sent for 0 permits, want none", n)
		}
		if exists(t, rdb, name) || exists(t, rdb, name+"-expirable") {
			t.Error("0 permits wrote a key")
		}
	})
}

// zeroIDs is nil when ids is empty and not nil (no permits, and an answer a caller can range over).
func zeroIDs(ids []string, err error) error {
	if err == nil && (ids == nil || len(ids) != 0) {
		return errors.New("want an empty, non-nil list of ids")
	}
	return err
}
