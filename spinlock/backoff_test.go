package spinlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/spinlock"
)

const ms = time.Millisecond

// Redisson's ExponentialBackOffPolicy: the first sleep is the initial delay; each next one is the
// last times the multiplier plus a jitter in [0, n) ms after the nth sleep, capped at the max, which
// then repeats.
func TestExponentialBackoffSleeps(t *testing.T) {
	for _, tc := range []struct {
		b                 spinlock.ExponentialBackoff
		initial, max      time.Duration
		multiplier, steps int
	}{
		{spinlock.ExponentialBackoff{}, 1 * ms, 128 * ms, 2, 12},
		{spinlock.ExponentialBackoff{Initial: 3 * ms, Max: time.Second, Multiplier: 3}, 3 * ms, time.Second, 3, 12},
		{spinlock.ExponentialBackoff{Initial: 5 * ms, Max: 5 * ms}, 5 * ms, 5 * ms, 2, 3},
		{spinlock.ExponentialBackoff{Multiplier: 1}, 1 * ms, 128 * ms, 1, 40},
	} {
		jitters := map[time.Duration]bool{}
		for range 500 {
			next := tc.b.Sleeps()
			last := next()
			require.Equal(t, tc.initial, last, "%+v: first sleep", tc.b)
			for n := 1; n < tc.steps; n++ {
				s := next()
				base := last * time.Duration(tc.multiplier)
				lo, hi := min(base, tc.max), min(base+time.Duration(n-1)*ms, tc.max)
				require.True(t, s >= lo && s <= hi, "%+v: sleep %d is %v after %v, want in [%v, %v]", tc.b, n+1, s, last, lo, hi)
				if s < tc.max {
					jitters[s-base] = true
				}
				last = s
			}
			if tc.multiplier > 1 && tc.steps >= 12 {
				require.Equal(t, tc.max, last, "%+v: sleeps end at the max", tc.b)
				require.Equal(t, tc.max, next(), "%+v: the max repeats", tc.b)
			}
		}
		if tc.max > tc.initial*time.Duration(tc.multiplier)*2 {
			require.Greater(t, len(jitters), 1, "%+v: the jitter never varied", tc.b)
		}
	}
}

func TestConstantBackoffSleeps(t *testing.T) {
	for b, want := range map[spinlock.ConstantBackoff]time.Duration{{}: 64 * ms, {Delay: 5 * ms}: 5 * ms} {
		next := b.Sleeps()
		for range 10 {
			require.Equal(t, want, next())
		}
	}
}

// New refuses bad policies before anything is sent.
func TestBadBackoff(t *testing.T) {
	_, c := testkit.Mini(t)
	for _, b := range []spinlock.Backoff{
		nil,
		spinlock.ExponentialBackoff{Initial: -ms},
		spinlock.ExponentialBackoff{Max: -ms},
		spinlock.ExponentialBackoff{Multiplier: -1},
		spinlock.ExponentialBackoff{Initial: 200 * ms},        // above the default max
		spinlock.ExponentialBackoff{Max: ms / 2},              // below the default initial
		spinlock.ExponentialBackoff{Initial: 2 * ms, Max: ms}, // initial above max
		spinlock.ConstantBackoff{Delay: -ms},
	} {
		_, err := spinlock.New(c, "bad-backoff", spinlock.WithBackoff(b))
		require.ErrorIs(t, err, redisync.ErrInvalidArgument, "%#v", b)
	}
	_, err := spinlock.New(c, "", spinlock.WithBackoff(spinlock.ConstantBackoff{}))
	require.ErrorIs(t, err, redisync.ErrInvalidArgument, "an empty name")
	_, err = spinlock.New(c, "bad-lease", spinlock.WithLease(-time.Second))
	require.ErrorIs(t, err, redisync.ErrInvalidArgument, "a negative lease")
}
