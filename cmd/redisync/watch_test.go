package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The watched view follows the lock: free, held, handed over to a waiter (new holder, new token),
// free again; a lease that only counts down prints nothing new.
func TestInspectWatch(t *testing.T) {
	tg := testkit.Standalone(t)
	rdb := tg.Redis(t)
	testkit.Do(t, rdb, "DEL", "watch-lock", "redisson_lock_token:{watch-lock}")
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- watch(ctx, rdb, "watch-lock", false, minInterval, &out) }()
	shows := func(s string) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, func() error {
			if !strings.Contains(out.String(), s) {
				return fmt.Errorf("no %q in:\n%s", s, out.String())
			}
			return nil
		})
	}
	shows("watch-lock: none")

	a, b := tg.Client(t), tg.Client(t)
	la, _ := rlock.New(a, "watch-lock", rlock.WithFencing())
	lb, _ := rlock.New(b, "watch-lock", rlock.WithFencing())
	held, err := la.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	shows("holder " + owner(a, held))
	views := strings.Count(out.String(), "-- ")
	got := testkit.Background(func() (context.Context, error) { return lb.Lock(context.Background()) })
	testkit.Eventually(t, 10*time.Second, func() error {
		if n, _ := rdb.Do(context.Background(), rdb.B().Zcard().Key("redisync_lock_waiters:{watch-lock}").Build()).AsInt64(); n != 1 {
			return fmt.Errorf("%d waiter records", n)
		}
		return nil
	})
	if err := la.Unlock(held); err != nil {
		t.Fatal(err)
	}
	h := testkit.Await(t, got, "waiter")
	shows("holder " + owner(b, h))
	token, _ := lb.Token(h)
	shows("last fencing token: " + strconv.FormatInt(token, 10))
	if n := strings.Count(out.String(), "-- "); n > views+3 {
		t.Errorf("%d views for one hand-over (the TTL counting down is no change):\n%s", n-views, out.String())
	}
	if err := lb.Unlock(h); err != nil {
		t.Fatal(err)
	}
	shows("watch-lock: lock, free")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	testkit.Do(t, rdb, "DEL", "redisson_lock_token:{watch-lock}")
}

// The tool watches until interrupted, and then exits 0.
func TestInspectWatchInterrupted(t *testing.T) {
	tg := testkit.Standalone(t)
	base := tg.Calls(t, "type")
	p := tool(t, tg.Addrs[0], "inspect", "--watch", "--interval", "100ms", "watch-none").start()
	testkit.Eventually(t, 20*time.Second, func() error { // reading: its signal handler is in place
		if n := tg.Calls(t, "type") - base; n < 2 {
			return fmt.Errorf("%d reads", n)
		}
		return nil
	})
	p.signal(syscall.SIGINT)
	if code := p.wait(20 * time.Second); code != 0 {
		t.Fatalf("%v", p)
	}
	if s := p.stdout.String(); strings.Count(s, "watch-none: none") != 1 {
		t.Fatalf("want the view once, as it never changed:\n%s", s)
	}
}

// TestInspectWatchCountdown: a view whose waiters and group values only count down their times is
// printed once, however many times it is read.
func TestInspectWatchCountdown(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	a, b := tg.Client(t), tg.Client(t)
	held := must(must(rlock.New(a, "watch-waited")).Lock(ctx))
	got := testkit.Background(func() (context.Context, error) { return must(rlock.New(b, "watch-waited")).Lock(ctx) })
	until(t, "the waiter's record", func() bool { return zcard(t, tg, "redisync_lock_waiters:{watch-waited}") == 1 })
	group := must(multilock.NewGroup(a, "watch-group", []string{"x", "y"}))
	groupHeld := must(group.Lock(ctx))

	for _, name := range []string{"watch-waited", "watch-group"} {
		wctx, cancel := context.WithCancel(ctx)
		var out lockedBuffer
		done := make(chan error, 1)
		go func() { done <- watch(wctx, rdb, name, false, minInterval, &out) }()
		before := tg.Calls(t, "type")
		testkit.Eventually(t, 20*time.Second, func() error { // ten reads, each a TYPE
			if n := tg.Calls(t, "type") - before; n < 10 {
				return fmt.Errorf("%d reads", n)
			}
			return nil
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), "-- "); n != 1 {
			t.Errorf("%s: %d views of one state, want 1:\n%s", name, n, out.String())
		}
	}
	check(t, must(rlock.New(a, "watch-waited")).Unlock(held))
	h := testkit.Await(t, got, "the waiter")
	check(t, must(rlock.New(b, "watch-waited")).Unlock(h))
	check(t, group.Unlock(groupHeld))
}
