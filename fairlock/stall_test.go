package fairlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// TestWaitersGivingUpAcrossAStallLeaveTheLine: two waiters of one Client try while the server
// stalls, and give up. Once it answers again (and the holder, if any, unlocks), the lock is soon free
// for anyone: the tries that ran after their waiters left take no place in line, which would keep the
// lock from everyone for a slot (5 minutes by default).
func TestWaitersGivingUpAcrossAStallLeaveTheLine(t *testing.T) {
	for _, how := range testkit.Stalls {
		for _, held := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/held=%v", how, held), func(t *testing.T) {
				t.Parallel()
				tg := testkit.Own(t)
				ctx := context.Background()
				fair := func() *fairlock.Lock {
					l, err := fairlock.New(tg.Client(t), "stalled")
					require.NoError(t, err)
					return l
				}
				holder, other, l := fair(), fair(), fair() // l: both waiters' Client
				var h context.Context
				if held {
					var err error
					h, err = holder.Lock(ctx)
					require.NoError(t, err)
				}

				resume := testkit.Stall(t, tg.Servers[0], how)
				const wait = time.Second
				start := time.Now()
				done := make(chan error, 2)
				for range 2 {
					go func() {
						_, err := l.TryLock(ctx, wait)
						done <- err
					}()
				}
				for range 2 {
					err := testkit.ReturnsWithin(t, start, wait, "a waiter's TryLock", func() error { return <-done })
					require.ErrorIs(t, err, redisync.ErrNotAcquired)
				}
				resume()
				if held {
					require.NoError(t, holder.Unlock(h))
				}

				// A try still on its way may acquire the free lock, or take a place before its
				// waiter's leaving is run, meanwhile: its Client gives that back as soon as its
				// answer comes, and the leaving takes the place out of line.
				testkit.Eventually(t, 10*time.Second, func() error {
					if n, err := other.Waiting(ctx); err != nil || n != 0 {
						return fmt.Errorf("%d in line (%v), want 0", n, err)
					}
					h2, err := other.TryLock(ctx, 0)
					if err != nil {
						return err
					}
					return other.Unlock(h2)
				})
			})
		}
	}
}
