package semaphore_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/semaphore"
)

// never is Redisson's expiry score of a permit without a lease.
const never = "922337203685477"

func newExpirable(t testing.TB, c *redisync.Client, name string, opts ...semaphore.Option) *semaphore.Expirable {
	t.Helper()
	e, err := semaphore.NewExpirable(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// counts returns available, acquired and permits in all.
func counts(t testing.TB, e *semaphore.Expirable) [3]int64 {
	t.Helper()
	ctx := context.Background()
	a, err1 := e.Available(ctx)
	q, err2 := e.Acquired(ctx)
	p, err3 := e.Permits(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	return [3]int64{a, q, p}
}

// timeoutKey is the Redisson ZSET of a permit-expirable semaphore, spelled out.
func timeoutKey(name string) string { return "{" + name + "}:timeout" }

// score returns the expiry score of a permit as Redis holds it ("" when absent).
func score(t testing.TB, rdb rueidis.Client, name, id string) string {
	t.Helper()
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rdb.Do(context.Background(), rdb.B().Zscore().Key(timeoutKey(name)).Member(string(raw)).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return v
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Redisson's RPermitExpirableSemaphore contract: counts after trySet, acquire, setPermits, add and
// release; ids are 32 hex digits whose 16 bytes are the ZSET members, scored "never" without a lease.
func TestExpirableCounts(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("expirable-counts")
		e := newExpirable(t, tg.Client(t), name)
		expect := func(what string, want [3]int64) {
			t.Helper()
			if got := counts(t, e); got != want {
				t.Fatalf("after %s: available, acquired, permits = %v, want %v", what, got, want)
			}
			if got, want := get(t, rdb, name), fmt.Sprint(want[0]); want != "0" && got != want {
				t.Fatalf("after %s: key holds %q, want %s", what, got, want)
			}
		}
		expect("nothing", [3]int64{0, 0, 0})
		if ok, err := e.TrySetPermits(ctx, 3); !ok || err != nil {
			t.Fatalf("TrySetPermits(3) on an unset semaphore: %v, %v", ok, err)
		}
		expect("TrySetPermits(3)", [3]int64{3, 0, 3})
		if ok, err := e.TrySetPermits(ctx, 9); ok || err != nil {
			t.Fatalf("second TrySetPermits: %v, %v; want false", ok, err)
		}
		ids, err := e.TryAcquire(ctx, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 2 || ids[0] == ids[1] || !hexID.MatchString(ids[0]) || !hexID.MatchString(ids[1]) {
			t.Fatalf("ids %q: want two distinct 32-hex-digit ids", ids)
		}
		for _, id := range ids {
			if s := score(t, rdb, name, id); s != never {
				t.Fatalf("permit without lease scored %q, want %s", s, never)
			}
		}
		expect("TryAcquire(2)", [3]int64{1, 2, 3})
		if err := e.SetPermits(ctx, 5); err != nil {
			t.Fatal(err)
		}
		expect("SetPermits(5)", [3]int64{3, 2, 5})
		if err := e.SetPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		expect("SetPermits(1)", [3]int64{-1, 2, 1})
		if _, err := e.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryAcquire with -1 available: %v, want ErrNotAcquired", err)
		}
		if err := e.AddPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		expect("AddPermits(2)", [3]int64{1, 2, 3})
		if err := e.Release(ctx, ids...); err != nil {
			t.Fatal(err)
		}
		expect("Release of both", [3]int64{3, 0, 3})
		if err := e.AddPermits(ctx, -3); err != nil {
			t.Fatal(err)
		}
		expect("AddPermits(-3)", [3]int64{0, 0, 0})
	})
}

// A permit taken with a 500 ms lease by a Client that then dies returns to the pool after about
// 500 ms, and a waiter gets it: the waiter is told when the lease ends, it does not poll (the recheck
// interval is a minute) and nobody sends a message.
func TestExpirableLeaseReturnsPermit(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("expirable-crash")
		crashing := tg.Client(t)
		e := newExpirable(t, crashing, name, semaphore.WithLease(500*time.Millisecond))
		if err := e.AddPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := e.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		crashing.Close()

		waiter := newExpirable(t, tg.Client(t, redisync.WithRecheckInterval(time.Minute)), name)
		ids, err := waiter.TryAcquire(ctx, 1, 10*time.Second)
		if err != nil {
			t.Fatalf("waiter did not get the permit of a dead client: %v", err)
		}
		d := time.Since(start)
		if d < 400*time.Millisecond || d > 5*time.Second {
			t.Fatalf("permit returned after %v, want about 500ms", d)
		}
		t.Logf("permit back after %v", d)
		if got := counts(t, waiter); got != [3]int64{0, 1, 1} {
			t.Fatalf("available, acquired, permits = %v, want [0 1 1]", got)
		}
		if err := waiter.Release(ctx, ids...); err != nil {
			t.Fatal(err)
		}
	})
}

// Releasing an expired, released or unknown id is ErrNotHeld; a list with one such id releases none.
func TestExpirableReleaseErrors(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("expirable-release")
		c := tg.Client(t)
		e := newExpirable(t, c, name)
		short := newExpirable(t, c, name, semaphore.WithLease(50*time.Millisecond))
		if err := e.AddPermits(ctx, 4); err != nil {
			t.Fatal(err)
		}
		expired, err := short.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := e.Acquire(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		unknown := "0123456789abcdef0123456789abcdef"
		for what, ids := range map[string][]string{
			"expired":            expired,
			"unknown":            {unknown},
			"valid and expired":  {kept[0], kept[1], expired[0]},
			"unknown then valid": {unknown, kept[0]},
		} {
			err := e.Release(ctx, ids...)
			if !errors.Is(err, redisync.ErrNotHeld) {
				t.Fatalf("Release of %s: %v, want ErrNotHeld", what, err)
			}
			if got := counts(t, e); got != [3]int64{2, 2, 4} {
				t.Fatalf("after the failed release of %s: available, acquired, permits = %v, want [2 2 4]", what, got)
			}
		}
		if err := e.Release(ctx, kept...); err != nil {
			t.Fatal(err)
		}
		if err := e.Release(ctx, kept[0]); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("second release of a permit: %v, want ErrNotHeld", err)
		}
		if got := counts(t, e); got != [3]int64{4, 0, 4} {
			t.Fatalf("available, acquired, permits = %v, want [4 0 4]", got)
		}
	})
}

// UpdateLease extends a permit past its first lease, or takes its lease away; a permit that expired
// cannot be extended.
func TestExpirableUpdateLease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("expirable-lease")
		// The lease outlasts the calls below on a busy machine; the test then waits for it to end.
		e := newExpirable(t, tg.Client(t), name, semaphore.WithLease(2*time.Second))
		if err := e.AddPermits(ctx, 3); err != nil {
			t.Fatal(err)
		}
		ids, err := e.Acquire(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := strconv.ParseInt(score(t, rdb, name, ids[0]), 10, 64)
		if err := e.UpdateLease(ctx, ids[0], 10*time.Second); err != nil {
			t.Fatal(err)
		}
		after, _ := strconv.ParseInt(score(t, rdb, name, ids[0]), 10, 64)
		if d := after - before; d < 8000 || d > 10000 {
			t.Fatalf("expiry moved by %d ms, want about 8000", d)
		}
		if err := e.UpdateLease(ctx, ids[1], 0); err != nil {
			t.Fatal(err)
		}
		if s := score(t, rdb, name, ids[1]); s != never {
			t.Fatalf("permit with its lease taken away scored %q, want %s", s, never)
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			if got := counts(t, e); got != [3]int64{1, 2, 3} {
				return fmt.Errorf("after the first lease: available, acquired, permits = %v, want [1 2 3]", got)
			}
			return nil
		})
		if err := e.UpdateLease(ctx, ids[2], time.Minute); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("UpdateLease of an expired permit: %v, want ErrNotHeld", err)
		}
		if err := e.UpdateLease(ctx, "0123456789abcdef0123456789abcdef", time.Minute); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("UpdateLease of an unknown permit: %v, want ErrNotHeld", err)
		}
		if err := e.Release(ctx, ids[:2]...); err != nil {
			t.Fatal(err)
		}
	})
}

// With P permits and 4P goroutines on several Clients, never more than P are inside, and everyone
// gets through.
func TestExpirableBound(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		for _, permits := range []int64{1, 3, 8} {
			t.Run(fmt.Sprint(permits), func(t *testing.T) {
				ctx := context.Background()
				name := unique("expirable-bound")
				clients := make([]*redisync.Client, 4)
				for i := range clients {
					clients[i] = tg.Client(t)
				}
				if err := newExpirable(t, clients[0], name).SetPermits(ctx, permits); err != nil {
					t.Fatal(err)
				}
				var sec testkit.Section
				var wg sync.WaitGroup
				const rounds = 4
				for g := range 4 * permits {
					e := newExpirable(t, clients[g%4], name, semaphore.WithLease(time.Minute))
					wg.Go(func() {
						for range rounds {
							ids, err := e.Acquire(ctx, 1)
							if err != nil {
								t.Error(err)
								return
							}
							sec.Enter()
							time.Sleep(2 * time.Millisecond)
							sec.Leave()
							if err := e.Release(ctx, ids...); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if sec.Max() > permits {
					t.Fatalf("%d holders inside at once with %d permits", sec.Max(), permits)
				}
				if want := 4 * permits * rounds; sec.Entries() != want {
					t.Fatalf("%d entries, want %d", sec.Entries(), want)
				}
				if got := counts(t, newExpirable(t, clients[0], name)); got != [3]int64{permits, 0, permits} {
					t.Fatalf("available, acquired, permits = %v at the end, want all %d available", got, permits)
				}
			})
		}
	})
}

// A release of 3 permit ids wakes a waiter asking for 2 and one asking for 1, by notification.
func TestExpirableReleaseWakesByCount(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("expirable-wake")
		c := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		holder := newExpirable(t, tg.Client(t), name)
		if err := holder.SetPermits(ctx, 3); err != nil {
			t.Fatal(err)
		}
		ids, err := holder.Acquire(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			ids []string
			err error
		}
		done := make(chan result, 2)
		for _, n := range []int64{2, 1} {
			e := newExpirable(t, c, name)
			go func() {
				ids, err := e.Acquire(ctx, n)
				done <- result{ids, err}
			}()
		}
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := waiting(c, name); n != 2 {
				return fmt.Errorf("%d waiting", n)
			}
			return nil
		})
		time.Sleep(100 * time.Millisecond)
		if err := holder.Release(ctx, ids...); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 2 {
			select {
			case r := <-done:
				if r.err != nil {
					t.Fatal(r.err)
				}
				got = append(got, r.ids...)
			case <-time.After(10 * time.Second):
				t.Fatal("a release of 3 permits did not let waiters for 2 and 1 through")
			}
		}
		if err := holder.Release(ctx, got...); err != nil {
			t.Fatal(err)
		}
	})
}

// Permits taken by a try that finishes after the caller's ctx ended are given back as soon as it does.
func TestExpirableAcquireAfterCancelGivesBack(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		name := unique("expirable-undo")
		sha := scriptSHA(t, "semaphore_expirable.lua")
		c, spy := spied(t, tg, func(args []string) bool {
			return args[1] == sha && len(args) > 7 && args[7] == "acquire"
		})
		e := newExpirable(t, c, name)
		if err := e.SetPermits(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		spy.onCall(cancel)
		if _, err := e.Acquire(ctx, 2); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire whose ctx ended meanwhile: %v, want context.Canceled", err)
		}
		if spy.calls.Load() != 1 {
			t.Fatalf("%d tries, want 1", spy.calls.Load())
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			if got := counts(t, e); got != [3]int64{2, 0, 2} {
				return fmt.Errorf("available, acquired, permits = %v after the acquisition was given back, want [2 0 2]", got)
			}
			return nil
		})
	})
}

// A permit written by hand as a Java process would (16 raw bytes, an expiry in the past) is returned
// to the pool by the next operation, which announces the count; our permits are Redisson's.
func TestExpirableJavaInterop(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("expirable-java")
		got := listen(t, tg, rdb, name)
		past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
		testkit.Do(t, rdb, "SET", name, "0")
		testkit.Do(t, rdb, "ZADD", timeoutKey(name), past, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f")
		testkit.Do(t, rdb, "ZADD", timeoutKey(name), never, "0123456789abcdef")
		e := newExpirable(t, tg.Client(t), name, semaphore.WithLease(time.Minute))
		if got := counts(t, e); got != [3]int64{1, 1, 2} {
			t.Fatalf("available, acquired, permits = %v, want [1 1 2]", got)
		}
		testkit.Eventually(t, 5*time.Second, func() error {
			if g := got(); len(g) != 1 || g[0] != "1" {
				return fmt.Errorf("messages %q, want [1]", g)
			}
			return nil
		})
		ids, err := e.TryAcquire(ctx, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		expiry, _ := strconv.ParseInt(score(t, rdb, name, ids[0]), 10, 64)
		if d := time.Until(time.UnixMilli(expiry)); d < 50*time.Second || d > 70*time.Second {
			t.Fatalf("a permit with a lease of a minute expires in %v", d)
		}
		if err := e.Release(ctx, hex.EncodeToString([]byte("0123456789abcdef"))); err != nil {
			t.Fatalf("releasing a permit a Java process took: %v", err)
		}
		if err := e.Release(ctx, ids...); err != nil {
			t.Fatal(err)
		}
		if got := counts(t, e); got != [3]int64{2, 0, 2} {
			t.Fatalf("available, acquired, permits = %v, want [2 0 2]", got)
		}
	})
}

// Bad input is refused before anything is sent; asking for more permits than the semaphore has in
// all fails at once instead of waiting forever.
func TestExpirableBadInput(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		c := tg.Client(t)
		name := unique("expirable-bad")
		for what, opts := range map[string][]semaphore.Option{
			"negative lease": {semaphore.WithLease(-time.Second)},
			"sub-ms lease":   {semaphore.WithLease(time.Microsecond)},
			"nil client":     nil,
			"empty name":     nil,
			"fine (control)": nil,
		} {
			cl, n := c, name
			switch what {
			case "nil client":
				cl = nil
			case "empty name":
				n = ""
			}
			_, err := semaphore.NewExpirable(cl, n, opts...)
			if what == "fine (control)" {
				if err != nil {
					t.Fatal(err)
				}
				continue
			}
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Errorf("NewExpirable with %s: %v, want ErrInvalidArgument", what, err)
			}
		}
		e := newExpirable(t, c, name)
		var nilCtx context.Context
		id := "0123456789abcdef0123456789abcdef"
		for what, err := range map[string]error{
			"Acquire(-1)":           must(e.Acquire(ctx, -1)),
			"Acquire(MaxAcquire+1)": must(e.Acquire(ctx, semaphore.MaxAcquire+1)),
			"TryAcquire wait -1s":   must(e.TryAcquire(ctx, 1, -time.Second)),
			"Release(short id)":     e.Release(ctx, "abcd"),
			"Release(not hex)":      e.Release(ctx, "0123456789abcdef0123456789abcdeg"),
			"Release(id, id)":       e.Release(ctx, id, id),
			"UpdateLease(bad id)":   e.UpdateLease(ctx, "x", time.Second),
			"UpdateLease(-1s)":      e.UpdateLease(ctx, id, -time.Second),
			"SetPermits(-1)":        e.SetPermits(ctx, -1),
			"TrySetPermits(-1)":     must(e.TrySetPermits(ctx, -1)),
			"nil ctx Acquire":       must(e.Acquire(nilCtx, 1)),
			"nil ctx Release":       e.Release(nilCtx, id),
			"nil ctx Permits":       must(e.Permits(nilCtx)),
			"nil ctx AddPermits":    e.AddPermits(nilCtx, 1),
			"AddPermits(0)":         e.AddPermits(ctx, 0),
			"nil ctx UpdateLease":   e.UpdateLease(nilCtx, id, 0),
		} {
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
			}
		}
		if exists(t, rdb, name) || exists(t, rdb, timeoutKey(name)) {
			t.Fatal("refused calls wrote keys")
		}

		// More than the semaphore has in all: an error at once, not a wait for the ctx.
		if err := e.SetPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		held, err := e.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		wait, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := e.Acquire(wait, 3); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("Acquire(3) of 2 permits: %v, want ErrInvalidArgument", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Acquire(3) of 2 permits waited %v before failing", d)
		}
		if got := counts(t, e); got != [3]int64{1, 1, 2} {
			t.Fatalf("available, acquired, permits = %v, want [1 1 2]", got)
		}

		// A key that is not a count is a Redis error, never a success.
		testkit.Do(t, rdb, "HSET", name+"-hash", "f", "1")
		testkit.Do(t, rdb, "SET", name+"-text", "many")
		for _, bad := range []string{name + "-hash", name + "-text"} {
			b := newExpirable(t, c, bad)
			for what, err := range map[string]error{
				"TryAcquire": must(b.TryAcquire(ctx, 1, 0)),
				"Acquire":    must(b.Acquire(ctx, 1)),
				"Available":  must(b.Available(ctx)),
				"SetPermits": b.SetPermits(ctx, 3),
				"AddPermits": b.AddPermits(ctx, 3),
			} {
				if err == nil || errors.Is(err, redisync.ErrNotAcquired) {
					t.Errorf("%s on %s: %v, want a Redis error", what, bad, err)
				}
			}
			if exists(t, rdb, timeoutKey(bad)) {
				t.Fatalf("failed calls on %s wrote permits", bad)
			}
		}
		if err := e.Release(ctx, held...); err != nil {
			t.Fatal(err)
		}
	})
}

// An acquisition whose answer is lost is sent again, which finds the permits the first send took by
// their ids: it takes effect once. When no answer ever comes, the permits it may have taken are given
// back (the ids are the caller's, so releasing them is safe whether or not they were taken).
func TestExpirableLostAnswer(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		name := unique("expirable-lost")
		sha := scriptSHA(t, "semaphore_expirable.lua")
		isAcquire := func(args []string) bool {
			return (args[1] == sha || args[1] == lua.Load("semaphore_expirable.lua").Resent().SHA1()) &&
				len(args) > 7 && args[7] == "acquire"
		}
		c, spy := spied(t, tg, isAcquire)
		e := newExpirable(t, c, name)
		require.NoError(t, e.SetPermits(ctx, 2))

		spy.lose.Store(1)
		ids, err := e.Acquire(ctx, 2)
		require.NoError(t, err, "Acquire whose first answer was lost")
		require.Len(t, ids, 2)
		require.EqualValues(t, 2, spy.calls.Load(), "the try, then the same try sent again")
		require.Equal(t, [3]int64{0, 2, 2}, counts(t, e), "available, acquired, permits: taken once")
		require.NoError(t, e.Release(ctx, ids...))
		require.Equal(t, [3]int64{2, 0, 2}, counts(t, e))

		spy.lose.Store(-1) // no answer ever comes
		ids, err = e.Acquire(ctx, 2)
		require.Error(t, err, "Acquire whose answers are all lost: %q", ids)
		require.NotErrorIs(t, err, redisync.ErrNotAcquired)
		spy.lose.Store(0)
		testkit.Eventually(t, 10*time.Second, func() error {
			if got := counts(t, e); got != [3]int64{2, 0, 2} {
				return fmt.Errorf("available, acquired, permits = %v, want [2 0 2]: given back", got)
			}
			return nil
		})
	})
}

// The lease a permit has left (Redisson's getLeaseTime), -1 without expiry, ErrNotHeld once it is
// released.
func TestExpirableLeaseLeft(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		e := newExpirable(t, tg.Client(t), unique("expirable-left"), semaphore.WithLease(time.Minute))
		if err := e.AddPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		ids, err := e.Acquire(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		left, err := e.LeaseLeft(ctx, ids[0])
		if err != nil || left <= 30*time.Second || left > time.Minute {
			t.Fatalf("LeaseLeft = %v, %v; want just under a minute", left, err)
		}
		if err := e.UpdateLease(ctx, ids[1], 0); err != nil {
			t.Fatal(err)
		}
		if left, err := e.LeaseLeft(ctx, ids[1]); err != nil || left != -1 {
			t.Fatalf("LeaseLeft of a permit that never expires = %v, %v; want -1", left, err)
		}
		if err := e.Release(ctx, ids...); err != nil {
			t.Fatal(err)
		}
		if _, err := e.LeaseLeft(ctx, ids[0]); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("LeaseLeft of a released permit = %v, want ErrNotHeld", err)
		}
		if _, err := e.LeaseLeft(ctx, "not-an-id"); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("LeaseLeft of a malformed id = %v, want ErrInvalidArgument", err)
		}
	})
}
