package spinlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// The spin lock and rlock on one name are one lock: each holder excludes the other kind, a spin
// release wakes a listening rlock waiter (whose Client would otherwise try again only after a
// minute), and an rlock release lets a spinning waiter in.
func TestSameLockAsRlock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		const name = "spin-and-rlock"
		spin := newLock(t, tg.Client(t), name, quick)
		rc := tg.Client(t, slow)
		rl, err := rlock.New(rc, name)
		require.NoError(t, err)

		held := mustLock(t, spin, ctx)
		_, err = rl.TryLock(ctx, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "rlock beside a spin holder")
		got := lockIn(rl, ctx)
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := testkit.Holds(rc); n != 1 {
				return fmt.Errorf("rlock waiter not under way (%d holds)", n)
			}
			if tg.Subscribers(t, "redisson_lock__channel:{"+name+"}") == 0 {
				return fmt.Errorf("rlock waiter not listening")
			}
			return nil
		})
		mustUnlock(t, spin, held)
		rheld := testkit.Await(t, got, "the rlock waiter after a spin release")

		_, err = spin.TryLock(ctx, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "spin beside an rlock holder")
		spun := lockIn(spin, ctx)
		require.NoError(t, rl.Unlock(rheld))
		mustUnlock(t, spin, testkit.Await(t, spun, "the spinning waiter after an rlock release"))
	})
}

// An owner that holds the lock through rlock re-enters it through the spin lock on the same Client:
// Redis counts one hash field for both, and so does the Client.
func TestReentryAcrossKinds(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		const name = "spin-rlock-reentry"
		rl, err := rlock.New(c, name)
		require.NoError(t, err)
		spin := newLock(t, c, name)
		outer, err := rl.Lock(context.Background())
		require.NoError(t, err)
		inner := mustLock(t, spin, outer)
		for _, count := range []func(context.Context) (int, error){rl.HoldCount, spin.HoldCount} {
			n, err := count(inner)
			require.NoError(t, err)
			require.Equal(t, 2, n)
		}
		require.ErrorIs(t, rl.Unlock(outer), redisync.ErrNotInnermost)
		mustUnlock(t, spin, inner)
		require.NoError(t, rl.Unlock(outer))
		locked, err := spin.IsLocked(context.Background())
		require.NoError(t, err)
		require.False(t, locked)
	})
}

// rlock and spin-lock owners on several Clients contend for one name: one inside at a time.
func TestExclusionWithRlock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const name, clients, rounds = "spin-rlock-mutex", 3, 30
		type locker interface {
			Do(ctx context.Context, fn func(context.Context) error) error
		}
		var lockers []locker
		for range clients {
			rl, err := rlock.New(tg.Client(t), name)
			require.NoError(t, err)
			lockers = append(lockers, rl, newLock(t, tg.Client(t), name, quick))
		}
		var sec testkit.Section
		var wg sync.WaitGroup
		for _, l := range lockers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					err := l.Do(context.Background(), func(context.Context) error {
						sec.Enter()
						defer sec.Leave()
						time.Sleep(100 * time.Microsecond)
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, sec.Max(), "owners inside at once")
		require.EqualValues(t, 2*clients*rounds, sec.Entries())
	})
}
