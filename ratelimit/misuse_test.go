package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
)

// limiterCalls are every method of l.
func limiterCalls(l *ratelimit.Limiter) testkit.Calls {
	ctx := context.Background()
	cfg := overall(5, time.Second)
	return testkit.Calls{
		"TrySetRate": func() error { _, err := l.TrySetRate(ctx, cfg); return err },
		"SetRate":    func() error { return l.SetRate(ctx, cfg) },
		"UpdateRate": func() error { _, err := l.UpdateRate(ctx, cfg); return err },
		"Acquire": func() error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return l.Acquire(ctx, 1)
		},
		"TryAcquire":  func() error { return l.TryAcquire(ctx, 1, time.Minute) },
		"Release":     func() error { return l.Release(ctx, 1) },
		"Available":   func() error { _, err := l.Available(ctx); return err },
		"Config":      func() error { _, err := l.Config(ctx); return err },
		"Expire":      func() error { _, err := l.Expire(ctx, time.Minute); return err },
		"ClearExpire": func() error { _, err := l.ClearExpire(ctx); return err },
		"TTL":         func() error { _, err := l.TTL(ctx); return err },
		"Delete":      func() error { _, err := l.Delete(ctx); return err },
	}
}

// TestCollidingNames: on a name that holds anything but a rate limiter's hash, every method refuses
// with redisync.ErrWrongType at once and changes nothing, TTL included.
func TestCollidingNames(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		for _, f := range testkit.ForeignsBut("limiter") {
			t.Run(f.Name, func(t *testing.T) {
				name := unique("colliding")
				f.Write(t, rdb, name)
				before := tg.State(t, rdb, name)
				l, err := ratelimit.New(c, name)
				require.NoError(t, err)
				testkit.RequireAll(t, redisync.ErrWrongType, limiterCalls(l))
				require.Equal(t, before, tg.State(t, rdb, name), "the name's keys after every method")
			})
		}
	})
}

// TestAfterClose: once its Client is closed, every method of a limiter returns redisync.ErrClosed.
func TestAfterClose(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l, err := ratelimit.New(c, unique("closed"))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		testkit.RequireAll(t, redisync.ErrClosed, limiterCalls(l))
	})
}
