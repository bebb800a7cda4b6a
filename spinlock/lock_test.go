package spinlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/spinlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// slow makes a Client's waiters that listen try on their own only once a minute: a waiter of such a
// Client that gets the lock promptly was woken, or did not listen.
var slow = redisync.WithRecheckInterval(time.Minute)

// quick keeps contended tests short: spinning waiters sleep at most 8 ms.
var quick = spinlock.WithBackoff(spinlock.ExponentialBackoff{Max: 8 * time.Millisecond})

func newLock(t testing.TB, c *redisync.Client, name string, opts ...spinlock.Option) *spinlock.Lock {
	t.Helper()
	l, err := spinlock.New(c, name, opts...)
	require.NoError(t, err)
	return l
}

func mustLock(t testing.TB, l *spinlock.Lock, ctx context.Context) context.Context {
	t.Helper()
	held, err := l.Lock(ctx)
	require.NoError(t, err, "Lock")
	return held
}

func mustUnlock(t testing.TB, l *spinlock.Lock, ctx context.Context) {
	t.Helper()
	require.NoError(t, l.Unlock(ctx), "Unlock")
}

func lockIn(l interface {
	Lock(context.Context) (context.Context, error)
}, ctx context.Context) <-chan testkit.Acquired {
	return testkit.Background(func() (context.Context, error) { return l.Lock(ctx) })
}

// tries counts the lock scripts on one name that a Client sends: a spinning waiter's tries.
type tries struct {
	rueidis.Client
	name string
	n    *atomic.Int64
}

func (c tries) count(cmd rueidis.Completed) {
	if a := cmd.Commands(); len(a) > 3 && strings.HasPrefix(a[0], "EVAL") && a[3] == c.name {
		c.n.Add(1)
	}
}

func (c tries) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c tries) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		c.count(cmd)
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// counted returns a Client on tg whose scripts on name are counted, once every script the lock
// sends is known to the server (a first EVALSHA answered NOSCRIPT is sent again as EVAL).
func counted(t *testing.T, tg *testkit.Target, name string, opts ...redisync.Option) (*redisync.Client, *atomic.Int64) {
	t.Helper()
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(rdb.Close)
	n := new(atomic.Int64)
	c, err := redisync.Wrap(tries{rdb, name, n}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	warm := newLock(t, c, name)
	mustUnlock(t, warm, mustLock(t, warm, context.Background()))
	n.Store(0)
	return c, n
}

// noSubscriptions requires that no node of tg has a channel subscribed, and that c's notifier has
// no waiter, now.
func noSubscriptions(t *testing.T, tg *testkit.Target, c *redisync.Client) {
	t.Helper()
	require.Zero(t, core.Of(c).Notifier().Waiters(), "waiters in the spinning Client's notifier")
	for _, s := range tg.Servers {
		for _, cmd := range []string{"CHANNELS", "SHARDCHANNELS"} {
			out, err := s.Do("PUBSUB", cmd)
			require.NoError(t, err)
			require.Empty(t, strings.TrimSpace(out), "PUBSUB %s on %s while a waiter spins", cmd, s.Addr)
		}
	}
}

// noRecords requires that nothing records a waiter or a listening Client beside the lock.
func noRecords(t *testing.T, tg *testkit.Target, name string) {
	t.Helper()
	rdb := tg.Redis(t)
	for _, k := range []string{"redisync_lock_waiters:{" + name + "}", "redisync_lock_clients:{" + name + "}"} {
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", k), "%s while a waiter spins", k)
	}
}

// A waiter spins: it subscribes to nothing and records nothing, tries at its policy's pace, and the
// first try after the release takes the lock.
func TestWaiterSpins(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const name = "spin-waits"
		const delay = 20 * time.Millisecond
		holder := newLock(t, tg.Client(t), name)
		c, n := counted(t, tg, name, slow)
		waiter := newLock(t, c, name, spinlock.WithBackoff(spinlock.ConstantBackoff{Delay: delay}))
		held := mustLock(t, holder, context.Background())
		got := lockIn(waiter, context.Background())
		testkit.Eventually(t, 10*time.Second, func() error {
			if n.Load() < 5 {
				return fmt.Errorf("%d tries so far", n.Load())
			}
			return nil
		})
		noSubscriptions(t, tg, c)
		noRecords(t, tg, name)
		before := n.Load()
		mustUnlock(t, holder, held)
		// The holder's lease is the watchdog's 30 s, and the waiter's Client would recheck after a
		// minute: only its own tries can take the lock now. A try already on its way may miss the
		// release; the one after it cannot.
		h := testkit.Await(t, got, "the spinning waiter")
		require.LessOrEqual(t, n.Load()-before, int64(2), "tries after the release")
		mustUnlock(t, waiter, h)
	})
}

// maxTries is how many tries at most a wait bound of wait leaves room for with a policy whose sleeps
// are at least lower: the first, and one after each sleep, the last sleep being cut short at the
// bound.
func maxTries(wait time.Duration, lower []time.Duration) int64 {
	var slept time.Duration
	for k, d := range lower {
		if slept >= wait {
			return int64(k) + 1
		}
		slept += d
	}
	panic("lower too short")
}

// The sleeps of ExponentialBackoff{} without its jitter, which only lengthens them.
func exponentialFloor(n int) []time.Duration {
	out := []time.Duration{time.Millisecond}
	for len(out) < n {
		out = append(out, min(2*out[len(out)-1], 128*time.Millisecond))
	}
	return out
}

// Against a held lock, TryLock tries as often as its policy lets it within the bound and no more,
// returns ErrNotAcquired not before the bound, and a try with wait 0 is one try. Redisson's default
// policy is the default.
func TestBackoffPacesTries(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const name = "spin-paced"
		ctx := context.Background()
		holder := newLock(t, tg.Client(t), name)
		c, n := counted(t, tg, name)
		held := mustLock(t, holder, ctx)
		defer mustUnlock(t, holder, held)

		const wait = time.Second
		for _, tc := range []struct {
			name  string
			opts  []spinlock.Option
			lower []time.Duration
		}{
			{"default", nil, exponentialFloor(100)},
			{"constant", []spinlock.Option{spinlock.WithBackoff(spinlock.ConstantBackoff{Delay: 100 * time.Millisecond})},
				slices.Repeat([]time.Duration{100 * time.Millisecond}, 100)},
		} {
			l := newLock(t, c, name, tc.opts...)
			n.Store(0)
			_, err := l.TryLock(ctx, 0)
			require.ErrorIs(t, err, redisync.ErrNotAcquired)
			require.EqualValues(t, 1, n.Load(), "%s: tries of TryLock(0)", tc.name)

			n.Store(0)
			start := time.Now()
			_, err = l.TryLock(ctx, wait)
			took := time.Since(start)
			require.ErrorIs(t, err, redisync.ErrNotAcquired)
			require.GreaterOrEqual(t, took, wait, "%s: TryLock gave up before its bound", tc.name)
			require.Less(t, took, wait+send.Overtime+2*time.Second, "%s: TryLock kept trying long after its bound", tc.name)
			most := maxTries(wait, tc.lower)
			t.Logf("%s: %d tries in %v (at most %d)", tc.name, n.Load(), took, most)
			require.LessOrEqual(t, n.Load(), most, "%s: tries within %v", tc.name, wait)
			require.GreaterOrEqual(t, n.Load(), int64(4), "%s: tries within %v", tc.name, wait)
		}

		// A ctx that ends stops a spinning waiter at once.
		l := newLock(t, c, name)
		wctx, cancel := context.WithCancel(ctx)
		got := lockIn(l, wctx)
		testkit.Eventually(t, 10*time.Second, func() error {
			if n.Load() < 2 {
				return errors.New("not spinning yet")
			}
			return nil
		})
		cancel()
		select {
		case r := <-got:
			require.ErrorIs(t, r.Err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("a cancelled spinning waiter did not return")
		}
	})
}

// A spin lock reports its acquisitions, waits and releases as "spin lock".
func TestEvents(t *testing.T) {
	var mu sync.Mutex
	var got []string
	_, c := testkit.Mini(t, redisync.WithEvents(func(e redisync.Event) {
		mu.Lock()
		got = append(got, e.Kind.String()+" "+e.Primitive)
		mu.Unlock()
	}))
	l := newLock(t, c, "spin-events", quick)
	held := mustLock(t, l, context.Background())
	_, err := l.TryLock(context.Background(), time.Second) // its first try returns within the bound
	require.ErrorIs(t, err, redisync.ErrNotAcquired)
	mustUnlock(t, l, held)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"acquired spin lock", "waiting spin lock", "not acquired spin lock", "released spin lock"}, got)
}
