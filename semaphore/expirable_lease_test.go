package semaphore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// AcquireFor and TryAcquireFor give the permits they take a lease of their own, whatever
// WithLease says: 0 never expires, and a fixed one returns them to the pool by itself.
func TestExpirableLeaseOfTheCall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("exp-lease-call")
		e := newExpirable(t, tg.Client(t), name, semaphore.WithLease(time.Hour))
		_, err := e.TrySetPermits(ctx, 3)
		require.NoError(t, err)
		for _, lease := range []time.Duration{-time.Second, time.Microsecond} {
			_, err := e.AcquireFor(ctx, 1, lease)
			require.ErrorIs(t, err, redisync.ErrInvalidArgument, "AcquireFor with a lease of %v", lease)
			_, err = e.TryAcquireFor(ctx, 1, 0, lease)
			require.ErrorIs(t, err, redisync.ErrInvalidArgument, "TryAcquireFor with a lease of %v", lease)
		}
		_, err = e.TryAcquireFor(ctx, 1, -time.Second, time.Second)
		require.ErrorIs(t, err, redisync.ErrInvalidArgument, "TryAcquireFor with a negative wait")

		forever, err := e.AcquireFor(ctx, 1, 0)
		require.NoError(t, err, "AcquireFor(1, 0)")
		require.Equal(t, never, score(t, rdb, name, forever[0]), "the expiry of a permit taken without a lease")

		start := time.Now()
		short, err := e.TryAcquireFor(ctx, 2, time.Second, 300*time.Millisecond)
		require.NoError(t, err, "TryAcquireFor(2, 1s, 300ms)")
		for _, id := range short {
			left, err := e.LeaseLeft(ctx, id)
			if err == nil { // a busy machine may ask after the lease
				require.LessOrEqual(t, left, 300*time.Millisecond, "the lease of a permit taken for 300ms")
			}
		}
		// They come back by themselves: a third acquisition waits for them.
		back, err := e.TryAcquire(ctx, 2, 20*time.Second)
		require.NoError(t, err, "TryAcquire of the permits whose lease ended")
		require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the permits came back before their lease ended")
		require.NoError(t, e.Release(ctx, append(back, forever...)...))
		require.Equal(t, [3]int64{3, 0, 3}, counts(t, e), "counts after every permit was released or expired")
	})
}

// Do holds n permits while fn runs and releases them after; with a lease, fn's ctx ends when the
// permits' lease may have ended, and Do returns the loss.
func TestExpirableDo(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		c := tg.Client(t)
		name := unique("exp-do")
		e := newExpirable(t, c, name)
		_, err := e.TrySetPermits(ctx, 2)
		require.NoError(t, err)
		boom := errors.New("boom")
		err = e.Do(ctx, 2, func(ctx context.Context) error {
			require.Equal(t, [3]int64{0, 2, 2}, counts(t, e), "counts inside Do")
			_, has := ctx.Deadline()
			require.False(t, has, "fn's ctx has a deadline without a lease")
			return boom
		})
		require.ErrorIs(t, err, boom, "Do's error")
		require.Equal(t, [3]int64{2, 0, 2}, counts(t, e), "counts after Do")

		leased := newExpirable(t, c, name, semaphore.WithLease(200*time.Millisecond))
		err = leased.Do(ctx, 1, func(ctx context.Context) error {
			<-ctx.Done()
			return context.Cause(ctx)
		})
		require.ErrorIs(t, err, redisync.ErrLost, "Do whose lease ended under fn")
		testkit.Eventually(t, 10*time.Second, func() error {
			if got := counts(t, e); got != [3]int64{2, 0, 2} {
				return errors.New("counts after the lease ended: " + strconv.FormatInt(got[0], 10) + " available")
			}
			return nil
		})
	})
}
