package ratelimit_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
)

// keysOf returns a limiter's Overall value and permits keys (a name without a hash tag of its own).
func keysOf(name string) (value, permits string) {
	return "{" + name + "}:value", "{" + name + "}:permits"
}

// pttl returns a key's PTTL.
func pttl(t testing.TB, rdb rueidis.Client, key string) int64 {
	t.Helper()
	ms, err := rdb.Do(context.Background(), rdb.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return ms
}

// about checks a PTTL within a minute below want.
func about(t testing.TB, rdb rueidis.Client, key string, want time.Duration) {
	t.Helper()
	ms := pttl(t, rdb, key)
	require.True(t, ms > (want-time.Minute).Milliseconds() && ms <= want.Milliseconds(), "PTTL %s = %d, want about %v", key, ms, want)
}

// TestRelease: Release gives permits back to the window, never above the rate, leaves the grants
// where they are (Redisson's release), and acts on this Client's window of a PerClient limiter.
func TestRelease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		rdb := tg.Redis(t)
		ctx := context.Background()
		name := unique("release")
		value, permits := keysOf(name)
		l, err := ratelimit.New(c, name)
		require.NoError(t, err)
		require.ErrorIs(t, l.Release(ctx, 1), redisync.ErrNotInitialized)
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", name, value, permits), "a Release without a rate created keys")

		_, err = l.TrySetRate(ctx, overall(10, time.Hour))
		require.NoError(t, err)
		// No window yet: it starts full, as Redisson's release writes it.
		require.NoError(t, l.Release(ctx, 4))
		require.Equal(t, "10", testkit.DoString(t, rdb, "GET", value))
		require.NoError(t, l.Acquire(ctx, 3))
		require.NoError(t, l.Acquire(ctx, 2))
		n, err := l.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 5, n)

		require.NoError(t, l.Release(ctx, 3))
		n, err = l.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 8, n)
		w := readWindow(t, rdb, value, permits)
		require.Equal(t, "8", w.value)
		require.Len(t, w.grants, 2, "Release removed grants: Redisson's keeps them")
		require.EqualValues(t, 5, w.used())

		require.NoError(t, l.Release(ctx, 10))
		require.NoError(t, l.Release(ctx, math.MaxInt64))
		require.Equal(t, "10", testkit.DoString(t, rdb, "GET", value), "Release went above the rate")
		require.NoError(t, l.Release(ctx, 0))
		require.NoError(t, l.TryAcquire(ctx, 10, 0), "the released permits are not there to take")

		// A cancelled ctx still releases.
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		require.NoError(t, l.Release(cancelled, 2))
		require.Equal(t, "2", testkit.DoString(t, rdb, "GET", value))
		_, err = l.Delete(ctx)
		require.NoError(t, err)
	})
}

// TestReleasePerClient: a PerClient limiter's Release fills this Client's window only, and renews
// the keys by the keep-alive as an acquisition does.
func TestReleasePerClient(t *testing.T) {
	tg := testkit.Standalone(t)
	c1, c2 := tg.Client(t), tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	name := unique("releaseper")
	l1, err := ratelimit.New(c1, name)
	require.NoError(t, err)
	l2, err := ratelimit.New(c2, name)
	require.NoError(t, err)
	_, err = l1.TrySetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 5, Interval: time.Minute, KeepAlive: time.Hour})
	require.NoError(t, err)
	require.NoError(t, l1.Acquire(ctx, 4))
	require.NoError(t, l2.Acquire(ctx, 3))
	testkit.Do(t, rdb, "PEXPIRE", name, "60000")
	require.NoError(t, l1.Release(ctx, 4))
	for l, want := range map[*ratelimit.Limiter]int64{l1: 5, l2: 2} {
		n, err := l.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	about(t, rdb, name, time.Hour)
	about(t, rdb, "{"+name+"}:value:"+c1.ID(), time.Hour)
	about(t, rdb, "{"+name+"}:permits:"+c1.ID(), time.Hour)
	require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", "{"+name+"}:value", "{"+name+"}:permits"), "the overall window was used")
	_, err = l1.Delete(ctx)
	require.NoError(t, err)
	_, err = l2.Delete(ctx)
	require.NoError(t, err)
}

// TestUpdateRateKeepState: with KeepState a rate grows or shrinks over the grants in the window (the
// permits left are the new rate minus them, 0 at least), a shorter interval lets older grants go, and
// a change of type keeps nothing; without it UpdateRate empties the window; a limiter that is not set
// stays unset.
func TestUpdateRateKeepState(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		rdb := tg.Redis(t)
		ctx := context.Background()
		name := unique("update")
		value, permits := keysOf(name)
		l, err := ratelimit.New(c, name)
		require.NoError(t, err)
		available := func(want int64, after string) {
			t.Helper()
			n, err := l.Available(ctx)
			require.NoError(t, err)
			require.Equal(t, want, n, "permits left after %s", after)
		}

		ok, err := l.UpdateRate(ctx, overall(10, time.Hour), ratelimit.KeepState())
		require.NoError(t, err)
		require.False(t, ok, "UpdateRate of a limiter that is not set")
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", name, value, permits), "UpdateRate created a limiter")

		// SetRate with KeepState sets a new limiter, its window full.
		require.NoError(t, l.SetRate(ctx, overall(10, time.Hour), ratelimit.KeepState()))
		require.Equal(t, "10", testkit.DoString(t, rdb, "GET", value))
		require.NoError(t, l.Acquire(ctx, 3))
		available(7, "a rate of 10 and 3 taken")

		ok, err = l.UpdateRate(ctx, overall(20, time.Hour), ratelimit.KeepState())
		require.NoError(t, err)
		require.True(t, ok)
		available(17, "the rate grew to 20")
		cfg, err := l.Config(ctx)
		require.NoError(t, err)
		require.Equal(t, overall(20, time.Hour), cfg)

		ok, err = l.UpdateRate(ctx, overall(2, time.Hour), ratelimit.KeepState())
		require.NoError(t, err)
		require.True(t, ok)
		available(0, "the rate shrank to 2 below the 3 taken")
		require.ErrorIs(t, l.TryAcquire(ctx, 1, 0), redisync.ErrNotAcquired)
		require.Len(t, readWindow(t, rdb, value, permits).grants, 1, "the grant left the window")

		// The permits left are counted from the grants: a Release's are not kept.
		ok, err = l.UpdateRate(ctx, overall(10, time.Hour), ratelimit.KeepState())
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, l.Release(ctx, 3))
		available(10, "Release(3)")
		ok, err = l.UpdateRate(ctx, overall(10, time.Hour), ratelimit.KeepState())
		require.NoError(t, err)
		require.True(t, ok)
		available(7, "an UpdateRate that recounts the grant of 3")

		// A shorter interval: the grant, older than it, leaves the window.
		at := readWindow(t, rdb, value, permits).grants[0].at
		testkit.Eventually(t, 5*time.Second, func() error {
			if serverMs(t, rdb) <= at+20 {
				return errors.New("the grant is not 20ms old yet")
			}
			return nil
		})
		ok, err = l.UpdateRate(ctx, overall(10, 20*time.Millisecond), ratelimit.KeepState())
		require.NoError(t, err)
		require.True(t, ok)
		w := readWindow(t, rdb, value, permits)
		require.Equal(t, "10", w.value)
		require.Empty(t, w.grants)

		// Without KeepState, the window is emptied.
		_, err = l.UpdateRate(ctx, overall(4, time.Hour), ratelimit.KeepState())
		require.NoError(t, err)
		require.NoError(t, l.Acquire(ctx, 1))
		ok, err = l.UpdateRate(ctx, overall(5, time.Hour))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", value, permits), "UpdateRate without KeepState left the window")
		available(5, "UpdateRate without KeepState")

		// A change of type: nothing to keep.
		require.NoError(t, l.Acquire(ctx, 2))
		ok, err = l.UpdateRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 5, Interval: time.Hour}, ratelimit.KeepState())
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", value, permits), "a change of type kept the overall window")
		available(5, "a change of type")
		_, err = l.Delete(ctx)
		require.NoError(t, err)
	})
}

// TestUpdateRateExpiry: UpdateRate with KeepState gives the keys the keep-alive rule of an
// acquisition: the keep-alive when there is one, else the limiter's own TTL, which it keeps.
func TestUpdateRateExpiry(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	name := unique("updatettl")
	value, permits := keysOf(name)
	l, err := ratelimit.New(c, name)
	require.NoError(t, err)
	_, err = l.TrySetRate(ctx, overall(10, time.Minute))
	require.NoError(t, err)
	require.NoError(t, l.Acquire(ctx, 1))
	testkit.Do(t, rdb, "PEXPIRE", name, "600000")
	_, err = l.UpdateRate(ctx, overall(8, time.Minute), ratelimit.KeepState())
	require.NoError(t, err)
	for _, key := range []string{name, value, permits} {
		about(t, rdb, key, 10*time.Minute)
	}
	_, err = l.UpdateRate(ctx, ratelimit.Config{Rate: 8, Interval: time.Minute, KeepAlive: time.Hour}, ratelimit.KeepState())
	require.NoError(t, err)
	for _, key := range []string{name, value, permits} {
		about(t, rdb, key, time.Hour)
	}
	_, err = l.Delete(ctx)
	require.NoError(t, err)
}

// TestExpire: Expire and ClearExpire act on the hash, the Overall window and this Client's PerClient
// window, as Redisson's; TTL reads the hash's; a limiter that expired is gone, keys and all.
func TestExpire(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c1, c2 := tg.Client(t), tg.Client(t)
		rdb := tg.Redis(t)
		ctx := context.Background()
		name := unique("expire")
		value, permits := keysOf(name)
		mine, theirs := "{"+name+"}:value:"+c1.ID(), "{"+name+"}:value:"+c2.ID()
		l1, err := ratelimit.New(c1, name)
		require.NoError(t, err)
		l2, err := ratelimit.New(c2, name)
		require.NoError(t, err)

		ok, err := l1.Expire(ctx, time.Hour)
		require.NoError(t, err)
		require.False(t, ok, "Expire of a limiter that is not set")
		ttl, err := l1.TTL(ctx)
		require.NoError(t, err)
		require.Zero(t, ttl)

		_, err = l1.TrySetRate(ctx, overall(5, time.Hour))
		require.NoError(t, err)
		require.NoError(t, l1.Acquire(ctx, 1))
		ttl, err = l1.TTL(ctx)
		require.NoError(t, err)
		require.EqualValues(t, -1, ttl)
		// Windows of this Client and of another, as a PerClient limiter leaves them.
		testkit.Do(t, rdb, "SET", mine, "5")
		testkit.Do(t, rdb, "SET", theirs, "5")

		ok, err = l1.Expire(ctx, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		for _, key := range []string{name, value, permits, mine} {
			about(t, rdb, key, time.Hour)
		}
		require.EqualValues(t, -1, pttl(t, rdb, theirs), "another Client's window got the TTL")
		ttl, err = l2.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 59*time.Minute && ttl <= time.Hour, "TTL = %v", ttl)
		// Without a keep-alive, an acquisition keeps the limiter's end.
		require.NoError(t, l2.Acquire(ctx, 1))
		about(t, rdb, name, time.Hour)

		ok, err = l2.ClearExpire(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		for _, key := range []string{name, value, permits} {
			require.EqualValues(t, -1, pttl(t, rdb, key), "%s kept its TTL", key)
		}
		about(t, rdb, mine, time.Hour) // c2's ClearExpire covers c2's window, not c1's
		ok, err = l2.ClearExpire(ctx)
		require.NoError(t, err)
		require.False(t, ok, "a second ClearExpire found a TTL to clear")
		ttl, err = l1.TTL(ctx)
		require.NoError(t, err)
		require.EqualValues(t, -1, ttl)

		// A short TTL ends the limiter: keys and all.
		ok, err = l1.Expire(ctx, 30*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := testkit.DoString(t, rdb, "EXISTS", name, value, permits, mine); n != "0" {
				return errors.New(n + " keys left")
			}
			return nil
		})
		require.ErrorIs(t, l1.Acquire(ctx, 1), redisync.ErrNotInitialized)
		testkit.Do(t, rdb, "DEL", theirs)
	})
}

// TestExpireKeepAlive: a limiter with a keep-alive takes it again at its next acquisition, after
// Expire as after ClearExpire.
func TestExpireKeepAlive(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	name := unique("expirekeep")
	value, permits := keysOf(name)
	l, err := ratelimit.New(c, name)
	require.NoError(t, err)
	_, err = l.TrySetRate(ctx, ratelimit.Config{Rate: 5, Interval: time.Minute, KeepAlive: time.Hour})
	require.NoError(t, err)
	require.NoError(t, l.Acquire(ctx, 1))
	_, err = l.Expire(ctx, 10*time.Minute)
	require.NoError(t, err)
	about(t, rdb, value, 10*time.Minute)
	require.NoError(t, l.Acquire(ctx, 1))
	about(t, rdb, value, time.Hour)
	_, err = l.ClearExpire(ctx)
	require.NoError(t, err)
	require.EqualValues(t, -1, pttl(t, rdb, permits))
	require.NoError(t, l.Acquire(ctx, 1))
	for _, key := range []string{name, value, permits} {
		about(t, rdb, key, time.Hour)
	}
	_, err = l.Delete(ctx)
	require.NoError(t, err)
}

// counter is a rueidis client that counts the commands a Client sends through it.
type counter struct {
	rueidis.Client
	sent atomic.Int64
}

func (c *counter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.sent.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *counter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.sent.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

// TestNewMethodsBadInput: bad arguments are refused with ErrInvalidArgument before anything is sent.
func TestNewMethodsBadInput(t *testing.T) {
	tg := testkit.Standalone(t)
	cnt := &counter{Client: tg.Redis(t)}
	c, err := redisync.Wrap(cnt)
	require.NoError(t, err)
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	ctx := context.Background()
	l, err := ratelimit.New(c, unique("badnew"))
	require.NoError(t, err)
	before := cnt.sent.Load()

	require.ErrorIs(t, l.Release(ctx, -1), redisync.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is refused, not a panic
	require.ErrorIs(t, l.Release(nil, 1), redisync.ErrInvalidArgument) //nolint:staticcheck
	require.NoError(t, l.Release(ctx, 0), "Release(0) does nothing")
	for _, cfg := range []ratelimit.Config{
		overall(0, time.Second),
		overall(10, 0),
		{Type: 2, Rate: 10, Interval: time.Second},
		{Rate: 10, Interval: time.Second, KeepAlive: time.Millisecond},
	} {
		_, err := l.UpdateRate(ctx, cfg, ratelimit.KeepState())
		require.ErrorIs(t, err, redisync.ErrInvalidArgument, "UpdateRate(%+v)", cfg)
		require.ErrorIs(t, l.SetRate(ctx, cfg, ratelimit.KeepState()), redisync.ErrInvalidArgument, "SetRate(%+v)", cfg)
	}
	_, err = l.UpdateRate(ctx, overall(5, time.Hour), nil)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	for _, ttl := range []time.Duration{0, -time.Second, time.Millisecond - 1} {
		_, err := l.Expire(ctx, ttl)
		require.ErrorIs(t, err, redisync.ErrInvalidArgument, "Expire(%v)", ttl)
	}
	//lint:ignore SA1012 a nil context is refused, not a panic
	_, err = l.ClearExpire(nil) //nolint:staticcheck
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is refused, not a panic
	_, err = l.TTL(nil) //nolint:staticcheck
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	require.Equal(t, before, cnt.sent.Load(), "a refused call sent something")
}
