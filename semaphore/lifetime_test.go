package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

func clientsKey(name string) string { return "redisync_semaphore_clients:{" + name + "}" }

// pttl returns the key's PTTL in ms (-2 when it does not exist, -1 without expiry).
func pttl(t testing.TB, tg *testkit.Target, key string) int64 {
	t.Helper()
	m := testkit.Do(t, tg.Redis(t), "PTTL", key)
	ms, err := m.AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// gone waits until none of keys exists.
func gone(t testing.TB, tg *testkit.Target, keys ...string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, k := range keys {
			if exists(t, tg.Redis(t), k) {
				return fmt.Errorf("%s still exists", k)
			}
		}
		return nil
	})
}

// ReleaseIfExists releases into an existing semaphore only, hands the permits to a waiter as Release
// does, and never sets a deleted semaphore anew.
func TestSemaphoreReleaseIfExists(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("release-if")
		s := newSemaphore(t, tg.Client(t), name)
		if ok, err := s.ReleaseIfExists(ctx, 2); ok || err != nil {
			t.Fatalf("ReleaseIfExists(2) of an unset semaphore: %v, %v; want false", ok, err)
		}
		if exists(t, rdb, name) {
			t.Fatal("ReleaseIfExists set an unset semaphore")
		}
		if ok, err := s.ReleaseIfExists(ctx, 0); ok || err != nil {
			t.Fatalf("ReleaseIfExists(0): %v, %v; want false, as Redisson", ok, err)
		}
		if _, err := s.ReleaseIfExists(ctx, -1); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("ReleaseIfExists(-1): %v, want ErrInvalidArgument", err)
		}
		if ok, err := s.TrySetPermits(ctx, 0); !ok || err != nil {
			t.Fatalf("TrySetPermits(0): %v, %v", ok, err)
		}
		wc := tg.Client(t, slow)
		waiter := newSemaphore(t, wc, name)
		done := acquireIn(waiter, ctx, 1)
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := waiting(wc, name); n != 1 {
				return fmt.Errorf("%d waiting", n)
			}
			return nil
		})
		if ok, err := s.ReleaseIfExists(ctx, 3); !ok || err != nil {
			t.Fatalf("ReleaseIfExists(3): %v, %v; want true", ok, err)
		}
		await(t, done, "waiter")
		if n, err := s.Available(ctx); n != 2 || err != nil {
			t.Fatalf("Available: %d, %v; want 2", n, err)
		}
		if ok, err := s.Delete(ctx); !ok || err != nil {
			t.Fatalf("Delete: %v, %v", ok, err)
		}
		if ok, err := waiter.ReleaseIfExists(ctx, 1); ok || err != nil {
			t.Fatalf("ReleaseIfExists after Delete: %v, %v; want false", ok, err)
		}
		if exists(t, rdb, name) {
			t.Fatal("ReleaseIfExists set a deleted semaphore anew")
		}
	})
}

// TrySetPermitsTTL sets the permits for a time to live, as Redisson's trySetPermits(n, ttl); when it
// ends the semaphore may be set again. It wakes a waiter as TrySetPermits does.
func TestSemaphoreTrySetPermitsTTL(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("try-set-ttl")
		s := newSemaphore(t, tg.Client(t), name)
		for _, ttl := range []time.Duration{0, -time.Second, 500 * time.Microsecond} {
			if _, err := s.TrySetPermitsTTL(ctx, 1, ttl); !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Fatalf("TrySetPermitsTTL with ttl %v: %v, want ErrInvalidArgument", ttl, err)
			}
		}
		if exists(t, tg.Redis(t), name) {
			t.Fatal("a refused TrySetPermitsTTL wrote the key")
		}
		wc := tg.Client(t, slow)
		waiter := newSemaphore(t, wc, name)
		done := acquireIn(waiter, ctx, 1)
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := waiting(wc, name); n != 1 {
				return fmt.Errorf("%d waiting", n)
			}
			return nil
		})
		if ok, err := s.TrySetPermitsTTL(ctx, 3, 10*time.Minute); !ok || err != nil {
			t.Fatalf("TrySetPermitsTTL(3, 10m): %v, %v", ok, err)
		}
		await(t, done, "waiter")
		if ms := pttl(t, tg, name); ms <= 9*60*1000 || ms > 10*60*1000 {
			t.Fatalf("PTTL %d ms after TrySetPermitsTTL(3, 10m)", ms)
		}
		if ok, err := s.TrySetPermitsTTL(ctx, 5, time.Second); ok || err != nil {
			t.Fatalf("second TrySetPermitsTTL: %v, %v; want false", ok, err)
		}
		if ms := pttl(t, tg, name); ms <= 9*60*1000 {
			t.Fatalf("PTTL %d ms after a TrySetPermitsTTL that did not set", ms)
		}
		if n, err := s.Available(ctx); n != 2 || err != nil {
			t.Fatalf("Available: %d, %v; want 2", n, err)
		}

		short := newSemaphore(t, tg.Client(t), name+"-short")
		if ok, err := short.TrySetPermitsTTL(ctx, 1, 100*time.Millisecond); !ok || err != nil {
			t.Fatalf("TrySetPermitsTTL(1, 100ms): %v, %v", ok, err)
		}
		gone(t, tg, short.Name())
		if ok, err := short.TrySetPermits(ctx, 2); !ok || err != nil {
			t.Fatalf("TrySetPermits once the TTL ended: %v, %v", ok, err)
		}
		if _, err := s.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := short.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Delete removes the semaphore and every key kept beside it, waiter records, clients and grants
// included; a waiter still waiting gets the permits of the semaphore set anew, by message.
func TestSemaphoreDelete(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("delete")
		s := newSemaphore(t, tg.Client(t), name)
		if ok, err := s.Delete(ctx); ok || err != nil {
			t.Fatalf("Delete of an unset semaphore: %v, %v; want false", ok, err)
		}
		var nilCtx context.Context
		if _, err := s.Delete(nilCtx); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("Delete(nil): %v, want ErrInvalidArgument", err)
		}
		if ok, err := s.TrySetPermits(ctx, 0); !ok || err != nil {
			t.Fatalf("TrySetPermits(0): %v, %v", ok, err)
		}
		wc := tg.Client(t, slow)
		waiter := newSemaphore(t, wc, name)
		done := acquireIn(waiter, ctx, 1)
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := waiting(wc, name); n != 1 {
				return fmt.Errorf("%d waiting", n)
			}
			return nil
		})
		oneRecord(t, tg, name)
		side := []string{name, waitersKey(name), clientsKey(name)}
		testkit.Do(t, rdb, "HSET", grantsKey(name), "gone:1:1", "1") // as a lost delete of a grant leaves
		side = append(side, grantsKey(name))
		for _, k := range side {
			if !exists(t, rdb, k) {
				t.Fatalf("%s does not exist before Delete", k)
			}
		}
		if ok, err := s.Delete(ctx); !ok || err != nil {
			t.Fatalf("Delete: %v, %v; want true", ok, err)
		}
		for _, k := range side {
			if exists(t, rdb, k) {
				t.Fatalf("%s left behind by Delete", k)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the waiter returned at Delete: %v", err)
		default:
		}
		if ok, err := s.TrySetPermits(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetPermits after Delete: %v, %v", ok, err)
		}
		await(t, done, "waiter of the semaphore set anew")
		if ok, err := s.Delete(ctx); !ok || err != nil {
			t.Fatalf("second Delete: %v, %v", ok, err)
		}
		gone(t, tg, side...)
	})
}

// Expire gives the semaphore a TTL, after which it may be set again; it refuses a TTL Redis would not
// keep and reports false for a semaphore that does not exist.
func TestSemaphoreExpire(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("expire")
		s := newSemaphore(t, tg.Client(t), name)
		if ok, err := s.Expire(ctx, time.Minute); ok || err != nil {
			t.Fatalf("Expire of an unset semaphore: %v, %v; want false", ok, err)
		}
		if ok, err := s.TrySetPermits(ctx, 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
		var nilCtx context.Context
		for what, err := range map[string]error{
			"Expire(0)":   must(s.Expire(ctx, 0)),
			"Expire(-1s)": must(s.Expire(ctx, -time.Second)),
			"Expire(1µs)": must(s.Expire(ctx, time.Microsecond)),
			"nil ctx":     must(s.Expire(nilCtx, time.Second)),
		} {
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Fatalf("%s: %v, want ErrInvalidArgument", what, err)
			}
		}
		if ms := pttl(t, tg, name); ms != -1 {
			t.Fatalf("PTTL %d after refused Expires, want -1", ms)
		}
		if ok, err := s.Expire(ctx, 10*time.Minute); !ok || err != nil {
			t.Fatalf("Expire(10m): %v, %v", ok, err)
		}
		if ms := pttl(t, tg, name); ms <= 9*60*1000 || ms > 10*60*1000 {
			t.Fatalf("PTTL %d ms after Expire(10m)", ms)
		}
		if ok, err := s.Expire(ctx, 100*time.Millisecond); !ok || err != nil {
			t.Fatalf("Expire(100ms): %v, %v", ok, err)
		}
		gone(t, tg, name)
		if ok, err := s.TrySetPermits(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetPermits once expired: %v, %v", ok, err)
		}
		if _, err := s.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TryRelease is Release that answers false instead of ErrNotHeld (Redisson's tryRelease): all the
// ids or none.
func TestExpirableTryRelease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		e := newExpirable(t, tg.Client(t), unique("try-release"))
		if err := e.SetPermits(ctx, 3); err != nil {
			t.Fatal(err)
		}
		ids, err := e.Acquire(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		unknown := "0123456789abcdef0123456789abcdef"
		if ok, err := e.TryRelease(ctx, ids[0], unknown); ok || err != nil {
			t.Fatalf("TryRelease of a held and an unknown id: %v, %v; want false", ok, err)
		}
		if got := counts(t, e); got != [3]int64{1, 2, 3} {
			t.Fatalf("after a TryRelease that failed: available, acquired, permits = %v, want [1 2 3]", got)
		}
		if _, err := e.TryRelease(ctx, "abc"); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("TryRelease of a malformed id: %v, want ErrInvalidArgument", err)
		}
		if ok, err := e.TryRelease(ctx); !ok || err != nil {
			t.Fatalf("TryRelease of no ids: %v, %v; want true", ok, err)
		}
		if ok, err := e.TryRelease(ctx, ids...); !ok || err != nil {
			t.Fatalf("TryRelease of held ids: %v, %v; want true", ok, err)
		}
		if ok, err := e.TryRelease(ctx, ids[0]); ok || err != nil {
			t.Fatalf("second TryRelease: %v, %v; want false", ok, err)
		}
		if got := counts(t, e); got != [3]int64{3, 0, 3} {
			t.Fatalf("available, acquired, permits = %v, want [3 0 3]", got)
		}
		if _, err := e.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Delete removes both keys of the expirable semaphore: the permits acquired end with it, and do not
// come back into the semaphore set anew.
func TestExpirableDelete(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("expirable-delete")
		e := newExpirable(t, tg.Client(t), name)
		if ok, err := e.Delete(ctx); ok || err != nil {
			t.Fatalf("Delete of an unset semaphore: %v, %v; want false", ok, err)
		}
		var nilCtx context.Context
		if _, err := e.Delete(nilCtx); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("Delete(nil): %v, want ErrInvalidArgument", err)
		}
		if ok, err := e.TrySetPermits(ctx, 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
		ids, err := e.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := e.Delete(ctx); !ok || err != nil {
			t.Fatalf("Delete: %v, %v; want true", ok, err)
		}
		if exists(t, rdb, name) || exists(t, rdb, timeoutKey(name)) {
			t.Fatal("keys left behind by Delete")
		}
		if err := e.Release(ctx, ids...); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("Release of a permit of the deleted semaphore: %v, want ErrNotHeld", err)
		}
		if exists(t, rdb, name) {
			t.Fatal("a Release after Delete set the semaphore anew")
		}
		if ok, err := e.TrySetPermits(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetPermits after Delete: %v, %v", ok, err)
		}
		if got := counts(t, e); got != [3]int64{1, 0, 1} {
			t.Fatalf("available, acquired, permits = %v, want [1 0 1]", got)
		}
		if _, err := e.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Expire gives both keys of the expirable semaphore the TTL, and a later acquire gives the permits
// what is left of it; once it ends, the permits acquired do not come back.
func TestExpirableExpire(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("expirable-expire")
		e := newExpirable(t, tg.Client(t), name)
		if ok, err := e.Expire(ctx, time.Minute); ok || err != nil {
			t.Fatalf("Expire of an unset semaphore: %v, %v; want false", ok, err)
		}
		var nilCtx context.Context
		for what, err := range map[string]error{
			"Expire(0)":   must(e.Expire(ctx, 0)),
			"Expire(-1s)": must(e.Expire(ctx, -time.Second)),
			"Expire(1µs)": must(e.Expire(ctx, time.Microsecond)),
			"nil ctx":     must(e.Expire(nilCtx, time.Second)),
		} {
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Fatalf("%s: %v, want ErrInvalidArgument", what, err)
			}
		}
		if ok, err := e.TrySetPermits(ctx, 3); !ok || err != nil {
			t.Fatal(ok, err)
		}
		held, err := e.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := e.Expire(ctx, 10*time.Minute); !ok || err != nil {
			t.Fatalf("Expire(10m): %v, %v", ok, err)
		}
		for _, k := range []string{name, timeoutKey(name)} {
			if ms := pttl(t, tg, k); ms <= 9*60*1000 || ms > 10*60*1000 {
				t.Fatalf("PTTL of %s %d ms after Expire(10m)", k, ms)
			}
		}
		if ok, err := e.Expire(ctx, time.Minute); !ok || err != nil {
			t.Fatalf("Expire(1m): %v, %v", ok, err)
		}
		later, err := e.TryAcquire(ctx, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if left, ms := pttl(t, tg, name), pttl(t, tg, timeoutKey(name)); ms <= 0 || ms > left {
			t.Fatalf("PTTL of the permits %d ms after an acquire from a semaphore with %d ms left", ms, left)
		}
		if ok, err := e.Expire(ctx, time.Millisecond); !ok || err != nil {
			t.Fatalf("Expire(1ms): %v, %v", ok, err)
		}
		gone(t, tg, name, timeoutKey(name))
		if err := e.Release(ctx, append(held, later...)...); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("Release of permits of the expired semaphore: %v, want ErrNotHeld", err)
		}
		if ok, err := e.TrySetPermits(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetPermits once expired: %v, %v", ok, err)
		}
		if got := counts(t, e); got != [3]int64{1, 0, 1} {
			t.Fatalf("available, acquired, permits = %v, want [1 0 1]", got)
		}
		if _, err := e.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
