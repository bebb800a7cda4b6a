package ratelimit_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
	"github.com/stretchr/testify/require"
)

func overall(rate int64, interval time.Duration) ratelimit.Config {
	return ratelimit.Config{Type: ratelimit.Overall, Rate: rate, Interval: interval}
}

// TestBadInput: bad arguments are refused with ErrInvalidArgument before anything is sent; a
// request above the rate is refused by the script, which changes nothing.
func TestBadInput(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	if _, err := ratelimit.New(nil, "x"); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := ratelimit.New(c, ""); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("empty name: %v", err)
	}
	if _, err := ratelimit.New(c, "x", ratelimit.WithClientID("")); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("empty client id: %v", err)
	}
	name := unique("bad")
	l, err := ratelimit.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []ratelimit.Config{
		overall(0, time.Second),
		overall(-1, time.Second),
		overall(math.MaxUint32+1, time.Second),
		overall(10, 999*time.Microsecond),
		overall(10, 0),
		{Type: 2, Rate: 10, Interval: time.Second},
		{Rate: 10, Interval: time.Second, KeepAlive: time.Second - time.Millisecond},
		{Rate: 10, Interval: time.Second, KeepAlive: -time.Second},
	} {
		if _, err := l.TrySetRate(ctx, cfg); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("TrySetRate(%+v): %v", cfg, err)
		}
		if err := l.SetRate(ctx, cfg); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("SetRate(%+v): %v", cfg, err)
		}
	}
	if n := testkit.DoString(t, rdb, "EXISTS", name); n != "0" {
		t.Fatal("a refused rate was stored")
	}
	if ok, err := l.TrySetRate(ctx, overall(5, time.Hour)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	for _, n := range []int64{0, -1, math.MaxUint32 + 1} {
		if err := l.Acquire(ctx, n); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("Acquire(%d): %v", n, err)
		}
	}
	if err := l.TryAcquire(ctx, 1, -time.Second); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Errorf("negative wait: %v", err)
	}
	//lint:ignore SA1012 a nil context is refused, not a panic
	if err := l.Acquire(nil, 1); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("nil context: %v", err)
	}
	if err := l.Acquire(ctx, 6); !errors.Is(err, redisync.ErrInvalidArgument) || !strings.Contains(err.Error(), "rate, 5") {
		t.Errorf("Acquire above the rate: %v", err)
	}
	if n, err := l.Available(ctx); n != 5 || err != nil {
		t.Errorf("Available after the refused acquisitions = %d, %v; want 5", n, err)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "{"+name+"}:value", "{"+name+"}:permits"); n != "0" {
		t.Errorf("a refused acquisition left %s window keys", n)
	}
	l.Delete(ctx)
}

// TestNotInitialized: a limiter without a rate fails with ErrNotInitialized and creates nothing.
func TestNotInitialized(t *testing.T) {
	tg := testkit.Standalone(t)
	name := unique("unset")
	l, err := ratelimit.New(tg.Client(t), name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := l.Acquire(ctx, 1); !errors.Is(err, redisync.ErrNotInitialized) {
		t.Errorf("Acquire: %v", err)
	}
	if _, err := l.Available(ctx); !errors.Is(err, redisync.ErrNotInitialized) {
		t.Errorf("Available: %v", err)
	}
	if _, err := l.Config(ctx); !errors.Is(err, redisync.ErrNotInitialized) {
		t.Errorf("Config: %v", err)
	}
	if ok, err := l.Delete(ctx); ok || err != nil {
		t.Errorf("Delete = %v, %v", ok, err)
	}
	if n := testkit.DoString(t, tg.Redis(t), "EXISTS", name, "{"+name+"}:value", "{"+name+"}:permits"); n != "0" {
		t.Errorf("%s keys created", n)
	}
}

// TestWrongType: a name holding another type, or a hash that is not a rate limiter (a lock), is
// refused by every call and left unchanged.
func TestWrongType(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	for _, setup := range [][]string{
		{"SET", "K", "12"},
		{"RPUSH", "K", "a"},
		{"HSET", "K", "c0ffee:1", "1"},               // an RLock
		{"HSET", "K", "rate", "10", "interval", "x"}, // not a number
		{"HSET", "K", "rate", "10", "interval", "1000", "type", "7"},
	} {
		name := unique("wrong")
		setup = append([]string(nil), setup...)
		setup[1] = name
		testkit.Do(t, rdb, setup...)
		dump := testkit.DoString(t, rdb, "DUMP", name)
		l, err := ratelimit.New(c, name)
		if err != nil {
			t.Fatal(err)
		}
		_, errTry := l.TrySetRate(ctx, overall(5, time.Second))
		errSet := l.SetRate(ctx, overall(5, time.Second))
		errAcquire := l.Acquire(ctx, 1)
		_, errAvail := l.Available(ctx)
		_, errConfig := l.Config(ctx)
		errKeep := l.SetRate(ctx, overall(5, time.Second), ratelimit.KeepState())
		_, errUpdate := l.UpdateRate(ctx, overall(5, time.Second), ratelimit.KeepState())
		errRelease := l.Release(ctx, 1)
		_, errExpire := l.Expire(ctx, time.Second)
		_, errClear := l.ClearExpire(ctx)
		_, errDelete := l.Delete(ctx)
		_, errTTL := l.TTL(ctx)
		for what, err := range map[string]error{"TTL": errTTL, "TrySetRate": errTry, "SetRate": errSet, "Acquire": errAcquire,
			"Available": errAvail, "Config": errConfig, "Delete": errDelete, "SetRate(KeepState)": errKeep,
			"UpdateRate": errUpdate, "Release": errRelease, "Expire": errExpire, "ClearExpire": errClear} {
			if !errors.Is(err, redisync.ErrWrongType) {
				t.Errorf("%v: %s: %v, want ErrWrongType", setup, what, err)
			}
		}
		if got := testkit.DoString(t, rdb, "DUMP", name); got != dump {
			t.Errorf("%v: the key was changed", setup)
		}
		if n := testkit.DoString(t, rdb, "EXISTS", "{"+name+"}:value", "{"+name+"}:permits"); n != "0" {
			t.Errorf("%v: window keys created", setup)
		}
		testkit.Do(t, rdb, "DEL", name)
	}
	// A limiter whose window key holds another type: the acquisition fails before any write.
	name := unique("wrongwindow")
	l, _ := ratelimit.New(c, name)
	if _, err := l.TrySetRate(ctx, overall(5, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	testkit.Do(t, rdb, "DEL", "{"+name+"}:permits")
	testkit.Do(t, rdb, "SET", "{"+name+"}:permits", "x")
	if err := l.Acquire(ctx, 1); !errors.Is(err, redisync.ErrWrongType) {
		t.Errorf("Acquire with a string as the permits key: %v", err)
	}
	if v := testkit.DoString(t, rdb, "GET", "{"+name+"}:value"); v != "4" {
		t.Errorf("value = %s after the refused acquisition, want 4", v)
	}
	// Keeping the window reads it first: a refusal changes nothing, the rate included.
	if err := l.SetRate(ctx, overall(9, time.Hour), ratelimit.KeepState()); !errors.Is(err, redisync.ErrWrongType) {
		t.Errorf("SetRate(KeepState) with a string as the permits key: %v", err)
	}
	if fields := testkit.DoString(t, rdb, "HMGET", name, "rate", "interval"); fields != "5\n3600000" {
		t.Errorf("hash = %q after the refused SetRate", fields)
	}
	testkit.Do(t, rdb, "DEL", "{"+name+"}:permits")
	testkit.Do(t, rdb, "SET", "{"+name+"}:value", "x")
	if err := l.Release(ctx, 1); !errors.Is(err, redisync.ErrWrongType) {
		t.Errorf("Release with a value that is not a number: %v", err)
	}
	l.Delete(ctx)
}

// TestLayout: Redisson's keys, hash fields and grants; TrySetRate keeps a rate, SetRate replaces it
// and empties the window.
func TestLayout(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		rdb := tg.Redis(t)
		ctx := context.Background()
		for _, name := range []string{unique("layout"), "{" + unique("tagged") + "}.limiter"} {
			l, err := ratelimit.New(c, name)
			if err != nil {
				t.Fatal(err)
			}
			value, permits := "{"+name+"}:value", "{"+name+"}:permits"
			if strings.HasPrefix(name, "{") {
				value, permits = name+":value", name+":permits"
			}
			if ok, err := l.TrySetRate(ctx, overall(10, time.Hour)); !ok || err != nil {
				t.Fatal(ok, err)
			}
			if ok, err := l.TrySetRate(ctx, overall(3, time.Second)); ok || err != nil {
				t.Fatalf("second TrySetRate = %v, %v", ok, err)
			}
			fields := testkit.DoString(t, rdb, "HMGET", name, "rate", "interval", "type", "keepAliveTime")
			if fields != "10\n3600000\n0\n0" {
				t.Errorf("hash = %q", fields)
			}
			before := serverMs(t, rdb)
			if err := l.Acquire(ctx, 3); err != nil {
				t.Fatal(err)
			}
			if err := l.Acquire(ctx, 2); err != nil {
				t.Fatal(err)
			}
			after := serverMs(t, rdb)
			w := readWindow(t, rdb, value, permits)
			if w.value != "5" || len(w.grants) != 2 || w.used() != 5 {
				t.Errorf("window = %+v, want value 5 and grants of 3 and 2", w)
			}
			for _, g := range w.grants {
				if g.at < before || g.at > after {
					t.Errorf("grant at %d, not by the server's clock (%d..%d)", g.at, before, after)
				}
			}
			if n, err := l.Available(ctx); n != 5 || err != nil {
				t.Errorf("Available = %d, %v", n, err)
			}
			if cfg, err := l.Config(ctx); cfg != overall(10, time.Hour) || err != nil {
				t.Errorf("Config = %+v, %v", cfg, err)
			}
			if err := l.SetRate(ctx, ratelimit.Config{Rate: 4, Interval: time.Minute, KeepAlive: 2 * time.Minute}); err != nil {
				t.Fatal(err)
			}
			if n := testkit.DoString(t, rdb, "EXISTS", value, permits); n != "0" {
				t.Errorf("SetRate left the window")
			}
			if n, err := l.Available(ctx); n != 4 || err != nil {
				t.Errorf("Available after SetRate = %d, %v", n, err)
			}
			if ok, err := l.Delete(ctx); !ok || err != nil {
				t.Errorf("Delete = %v, %v", ok, err)
			}
			if n := testkit.DoString(t, rdb, "EXISTS", name, value, permits); n != "0" {
				t.Errorf("Delete left %s keys", n)
			}
		}
	})
}

// TestKeepAlive: with a keep-alive every key lives that long after an acquisition; without, the
// window takes the limiter's own TTL.
func TestKeepAlive(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	name := unique("keep")
	l, _ := ratelimit.New(c, name)
	cfg := ratelimit.Config{Rate: 5, Interval: time.Second, KeepAlive: time.Hour}
	if ok, err := l.TrySetRate(ctx, cfg); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := l.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{name, "{" + name + "}:value", "{" + name + "}:permits"} {
		ttl, _ := rdb.Do(ctx, rdb.B().Pttl().Key(key).Build()).AsInt64()
		if ttl <= time.Hour.Milliseconds()-time.Minute.Milliseconds() || ttl > time.Hour.Milliseconds() {
			t.Errorf("PTTL %s = %d, want about an hour", key, ttl)
		}
	}
	if got, _ := l.Config(ctx); got != cfg {
		t.Errorf("Config = %+v", got)
	}
	l.Delete(ctx)

	name = unique("expire")
	l, _ = ratelimit.New(c, name)
	if ok, err := l.TrySetRate(ctx, overall(5, time.Second)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	testkit.Do(t, rdb, "PEXPIRE", name, "600000")
	if err := l.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"{" + name + "}:value", "{" + name + "}:permits"} {
		ttl, _ := rdb.Do(ctx, rdb.B().Pttl().Key(key).Build()).AsInt64()
		if ttl <= 0 || ttl > 600000 {
			t.Errorf("PTTL %s = %d, want the limiter's", key, ttl)
		}
	}
	testkit.Do(t, rdb, "DEL", name, "{"+name+"}:value", "{"+name+"}:permits")
}

// TestPerClient: each Client has a window of its own under its id, and WithClientID shares one.
func TestPerClient(t *testing.T) {
	tg := testkit.Standalone(t)
	c1, c2 := tg.Client(t), tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	name := unique("per")
	l1, _ := ratelimit.New(c1, name)
	l2, _ := ratelimit.New(c2, name)
	l3, _ := ratelimit.New(c2, name, ratelimit.WithClientID(c1.ID()))
	if ok, err := l1.TrySetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 2, Interval: time.Hour, KeepAlive: time.Hour}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := l1.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := l2.TryAcquire(ctx, 2, 0); err != nil {
		t.Errorf("another client's window was used: %v", err)
	}
	if err := l3.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Errorf("the shared client id's window had room: %v", err)
	}
	w := readWindow(t, rdb, "{"+name+"}:value:"+c1.ID(), "{"+name+"}:permits:"+c1.ID())
	if w.value != "0" || w.used() != 2 {
		t.Errorf("client window = %+v", w)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "{"+name+"}:value", "{"+name+"}:permits"); n != "0" {
		t.Errorf("the overall window was used")
	}
	l1.Delete(ctx)
	l2.Delete(ctx)
}

// TestWaitIsExact: a waiter sleeps until the script says the permits come free, not in recheck
// steps: one try fails, the next succeeds, and it succeeds no earlier than the first grant's end.
func TestWaitIsExact(t *testing.T) {
	tg := testkit.Standalone(t)
	var log grantLog
	// A recheck interval far below the window: a waiter capped by it would try many times.
	c, rec := recorded(t, tg, &log, redisync.WithRecheckInterval(20*time.Millisecond))
	ctx := context.Background()
	l, _ := ratelimit.New(c, unique("exact"))
	const interval = 400 * time.Millisecond
	if _, err := l.TrySetRate(ctx, overall(2, interval)); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	tries := rec.tries.Load()
	if err := l.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := rec.tries.Load() - tries; n != 2 {
		t.Errorf("the waiter tried %d times, want 2 (one that answers the wait, one after it)", n)
	}
	g := log.sorted()
	if len(g) != 2 || g[1].at-g[0].at < interval.Milliseconds() {
		t.Errorf("grants %+v: the second is less than %v after the first", g, interval)
	}
	l.Delete(ctx)
}

// TestTryAcquireGivesUpEarly: a try whose answer is beyond the wait bound ends the wait at once.
func TestTryAcquireGivesUpEarly(t *testing.T) {
	tg := testkit.Standalone(t)
	c, rec := recorded(t, tg, nil)
	ctx := context.Background()
	l, _ := ratelimit.New(c, unique("early"))
	if _, err := l.TrySetRate(ctx, overall(1, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	tries := rec.tries.Load()
	if err := l.TryAcquire(ctx, 1, time.Minute); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired", err)
	}
	if n := rec.tries.Load() - tries; n != 1 {
		t.Errorf("%d tries, want 1", n)
	}
	if err := l.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Errorf("TryAcquire(0) = %v", err)
	}
	l.Delete(ctx)
}

// TestCancelEndsWait: cancelling ctx ends a wait of an hour at once, and takes nothing.
func TestCancelEndsWait(t *testing.T) {
	tg := testkit.Standalone(t)
	var log grantLog
	c, rec := recorded(t, tg, &log)
	rdb := tg.Redis(t)
	name := unique("cancel")
	l, _ := ratelimit.New(c, name)
	if _, err := l.TrySetRate(context.Background(), overall(1, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	tries := rec.tries.Load()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Acquire(ctx, 1) }()
	testkit.Eventually(t, 5*time.Second, func() error {
		if rec.tries.Load() == tries {
			return errors.New("the waiter has not tried yet")
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the wait")
	}
	if w := readWindow(t, rdb, "{"+name+"}:value", "{"+name+"}:permits"); w.value != "0" || len(w.grants) != 1 {
		t.Errorf("window = %+v", w)
	}
	l.Delete(context.Background())
}

// TestGiveBack: an acquisition whose caller left while its script ran is given back.
func TestGiveBack(t *testing.T) {
	tg := testkit.Standalone(t)
	c, rec := recorded(t, tg, nil)
	rdb := tg.Redis(t)
	name := unique("giveback")
	l, _ := ratelimit.New(c, name)
	if _, err := l.TrySetRate(context.Background(), overall(3, time.Hour)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fn := func() { cancel() }
	rec.after.Store(&fn)
	if err := l.Acquire(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	rec.after.Store(nil)
	if w := readWindow(t, rdb, "{"+name+"}:value", "{"+name+"}:permits"); w.value != "3" || len(w.grants) != 0 {
		t.Errorf("window = %+v: the grant was not given back", w)
	}
	l.Delete(context.Background())
}

// TestAvailableChangesNothing: Available counts the grants that left the window without writing.
func TestAvailableChangesNothing(t *testing.T) {
	tg := testkit.Standalone(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	name := unique("avail")
	l, _ := ratelimit.New(c, name)
	if _, err := l.TrySetRate(ctx, overall(3, 50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	value, permits := "{"+name+"}:value", "{"+name+"}:permits"
	before := readWindow(t, rdb, value, permits)
	testkit.Eventually(t, 5*time.Second, func() error {
		if n, err := l.Available(ctx); n != 3 || err != nil {
			return errors.New("the grant has not left the window yet")
		}
		return nil
	})
	if after := readWindow(t, rdb, value, permits); after.value != before.value || len(after.grants) != len(before.grants) {
		t.Errorf("Available changed the window: %+v -> %+v", before, after)
	}
	l.Delete(ctx)
}

// TestWaiterLearnsOfChangesAtItsNextTry: a waiter whose limiter is deleted, or whose rate drops
// below the permits it asks for, gets the error from its next try and returns it at once: errors
// that are answers are not tried again.
func TestWaiterLearnsOfChangesAtItsNextTry(t *testing.T) {
	tg := testkit.Standalone(t)
	for _, tc := range []struct {
		name   string
		change func(ctx context.Context, l *ratelimit.Limiter) error
		want   error
	}{
		{"deleted", func(ctx context.Context, l *ratelimit.Limiter) error { _, err := l.Delete(ctx); return err }, redisync.ErrNotInitialized},
		{"rate below the permits", func(ctx context.Context, l *ratelimit.Limiter) error { return l.SetRate(ctx, overall(1, time.Hour)) }, redisync.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := recorded(t, tg, nil)
			ctx := context.Background()
			l, _ := ratelimit.New(c, unique("changed"))
			const interval = 300 * time.Millisecond
			_, err := l.TrySetRate(ctx, overall(2, interval))
			require.NoError(t, err)
			require.NoError(t, l.Acquire(ctx, 2)) // the window is full for an interval
			tries := rec.tries.Load()
			done := make(chan error, 1)
			go func() { done <- l.Acquire(ctx, 2) }()
			testkit.Eventually(t, 5*time.Second, func() error {
				if rec.tries.Load() == tries {
					return errors.New("the waiter has not tried yet")
				}
				return nil
			})
			require.NoError(t, tc.change(ctx, l))
			select {
			case err := <-done:
				require.ErrorIs(t, err, tc.want)
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter did not return")
			}
			require.EqualValues(t, 2, rec.tries.Load()-tries, "the try that waited, then the one that got the error")
			l.Delete(ctx)
		})
	}
}
