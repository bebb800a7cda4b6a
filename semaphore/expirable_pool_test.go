package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// serverMs returns the server's clock in milliseconds, the clock that permit expiries are read by.
func serverMs(t testing.TB, rdb rueidis.Client) int64 {
	t.Helper()
	v, err := rdb.Do(context.Background(), rdb.B().Time().Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return s*1000 + us/1000
}

// The permit-expirable semaphore over-admitted when its key had a TTL: A's permit, taken from a
// pool that then expired, came back into the pool set anew when A's lease ended, and C acquired
// while B held the only permit. A permit never returns into a pool it was not taken from, whether
// the TTL was given before A acquired (the permits then expire with the pool, Redisson's rule) or
// after.
func TestExpirableTTLDoesNotOverAdmit(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		for _, before := range []bool{true, false} {
			t.Run(fmt.Sprintf("ttl before acquire %v", before), func(t *testing.T) {
				ctx := context.Background()
				rdb := tg.Redis(t)
				name := unique("expirable-ttl")
				c := tg.Client(t)
				a := newExpirable(t, c, name, semaphore.WithLease(1500*time.Millisecond))
				e := newExpirable(t, c, name)
				if ok, err := e.TrySetPermits(ctx, 1); !ok || err != nil {
					t.Fatalf("TrySetPermits(1): %v, %v", ok, err)
				}
				expire := func() { testkit.Do(t, rdb, "PEXPIRE", name, "200") }
				if before {
					expire()
				}
				held, err := a.TryAcquire(ctx, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				leaseEnd, _ := strconv.ParseInt(score(t, rdb, name, held[0]), 10, 64)
				if before {
					m := testkit.Do(t, rdb, "PTTL", timeoutKey(name))
					ms, _ := m.AsInt64()
					switch {
					case ms == -2 && !exists(t, rdb, name):
						t.Log("the pool's 200 ms ended before its permits' PTTL was read: nothing to compare")
					case ms <= 0 || ms > 200:
						t.Fatalf("the permits' PTTL is %d after an acquire from a pool with 200 ms left, want the pool's", ms)
					}
				} else {
					expire()
				}
				testkit.Eventually(t, 10*time.Second, func() error {
					if exists(t, rdb, name) {
						return errors.New("the semaphore's key has not expired")
					}
					return nil
				})
				if ok, err := e.TrySetPermits(ctx, 1); !ok || err != nil {
					t.Fatalf("TrySetPermits(1) after the key expired: %v, %v", ok, err)
				}
				b, err := e.TryAcquire(ctx, 1, 0)
				if err != nil {
					t.Fatalf("B's acquire from the new pool: %v", err)
				}
				testkit.Eventually(t, 10*time.Second, func() error {
					if now := serverMs(t, rdb); now <= leaseEnd {
						return fmt.Errorf("A's lease ends in %d ms", leaseEnd-now)
					}
					return nil
				})
				if _, err := e.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
					t.Fatalf("C's acquire while B holds the only permit: %v, want ErrNotAcquired", err)
				}
				if err := a.Release(ctx, held...); !errors.Is(err, redisync.ErrNotHeld) {
					t.Fatalf("A's release of a permit of the expired pool: %v, want ErrNotHeld", err)
				}
				if got := counts(t, e); got != [3]int64{0, 1, 1} {
					t.Fatalf("available, acquired, permits = %v, want [0 1 1]", got)
				}
				if err := e.Release(ctx, b...); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
