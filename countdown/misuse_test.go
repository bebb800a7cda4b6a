package countdown

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// latchCalls are every method of l.
func latchCalls(l *Latch) testkit.Calls {
	ctx := context.Background()
	return testkit.Calls{
		"TrySetCount": func() error { _, err := l.TrySetCount(ctx, 3); return err },
		"CountDown":   func() error { return l.CountDown(ctx) },
		"Count":       func() error { _, err := l.Count(ctx); return err },
		"Delete":      func() error { _, err := l.Delete(ctx); return err },
		"Await": func() error {
			// Not waited for: a wait would end with the deadline, not the refusal.
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return l.Await(ctx)
		},
		"TryAwait": func() error { return l.TryAwait(ctx, time.Minute) },
	}
}

// TestCollidingNames: on a name that holds anything but a latch's count (an application's string,
// hash or list, a lock's hash, a semaphore's count of 0 or below), every method refuses with
// redisync.ErrWrongType at once, and changes nothing: Delete deletes nothing.
func TestCollidingNames(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		for _, f := range testkit.ForeignsBut("count") {
			t.Run(f.Name, func(t *testing.T) {
				name := "colliding:" + t.Name()
				f.Write(t, rdb, name)
				before := tg.State(t, rdb, name)
				testkit.RequireAll(t, redisync.ErrWrongType, latchCalls(newLatch(t, c, name)))
				require.Equal(t, before, tg.State(t, rdb, name), "the name's keys after every method")
			})
		}
	})
}

// TestAfterClose: once its Client is closed, every method of a latch returns redisync.ErrClosed.
func TestAfterClose(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLatch(t, c, "closed:"+t.Name())
		require.NoError(t, c.Close())
		testkit.RequireAll(t, redisync.ErrClosed, latchCalls(l))
	})
}
