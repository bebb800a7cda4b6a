package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// listJSON runs 'redisync list --json args...' and decodes its output by name.
func listJSON(t *testing.T, addr string, args ...string) map[string]listed {
	t.Helper()
	p := tool(t, addr, append([]string{"list", "--json"}, args...)...)
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	var all []listed
	if err := json.Unmarshal(p.stdout.Bytes(), &all); err != nil {
		t.Fatalf("%v: %s", err, p.stdout.String())
	}
	byName := make(map[string]listed, len(all))
	for _, l := range all {
		byName[l.Name] = l
	}
	return byName
}

// must returns v, for the setup of a test: err is not expected there.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// background runs fn until the test ends, when its ctx is cancelled and it is waited for.
func background(t *testing.T, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A Redis holding every kind of primitive, with waiters where Redis records them, and keys of other
// layouts: list finds the primitives by their layout and leaves the other keys out.
func TestList(t *testing.T) {
	tg := testkit.Own(t)
	addr := tg.Addrs[0]
	ctx := context.Background()
	c := tg.Client(t, redisync.WithWatchdogTimeout(20*time.Second))
	other := tg.Client(t, redisync.WithWatchdogTimeout(20*time.Second))

	lock := must(rlock.New(c, "ls-lock"))
	held := must(lock.Lock(ctx))
	waiter := must(rlock.New(other, "ls-lock"))
	background(t, func(ctx context.Context) { // a waiter, which records itself
		if h, err := waiter.Lock(ctx); err == nil {
			waiter.Unlock(h)
		}
	})
	fair := must(fairlock.New(c, "ls-fair"))
	fairHeld := must(fair.Lock(ctx))
	fairWaiter := must(fairlock.New(other, "ls-fair"))
	background(t, func(ctx context.Context) {
		if h, err := fairWaiter.Lock(ctx); err == nil {
			fairWaiter.Unlock(h)
		}
	})
	rw := must(rwlock.New(c, "ls-rw"))
	readHeld := must(rw.ReadLock().Lock(ctx))
	sem := must(semaphore.New(c, "ls-sem"))
	must(sem.TrySetPermits(ctx, 1))
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	semWaiter := must(semaphore.New(other, "ls-sem"))
	background(t, func(ctx context.Context) {
		if semWaiter.Acquire(ctx, 1) == nil {
			semWaiter.Release(context.Background(), 1)
		}
	})
	exp := must(semaphore.NewExpirable(c, "ls-expirable", semaphore.WithLease(time.Minute)))
	must(exp.TrySetPermits(ctx, 3))
	ids := must(exp.Acquire(ctx, 1))
	latch := must(countdown.New(c, "ls-latch"))
	must(latch.TrySetCount(ctx, 2))
	background(t, func(ctx context.Context) { latch.Await(ctx) })
	limiter := must(ratelimit.New(c, "ls-rate"))
	must(limiter.TrySetRate(ctx, ratelimit.Config{Rate: 10, Interval: time.Second}))
	idle := must(semaphore.New(c, "ls-idle-semaphore"))
	must(idle.TrySetPermits(ctx, 5))

	rdb := tg.Redis(t)
	for _, cmd := range [][]string{
		{"SET", "app:counter", "42"},
		{"SET", "app:greeting", "hello"},
		{"HSET", "app:user", "name", "bob", "age", "3"},
		{"HSET", "app:pairs", "a:b", "1", "c:d", "2"}, // owner-like, but not "<id>:<number>"
		{"HSET", "app:modes", "mode", "fast", "x:1", "1"},
		{"RPUSH", "app:jobs", "a", "b"},
		{"ZADD", "{app}:timeout", "1", "not-a-permit"},
		{"SADD", "app:set", "x"},
	} {
		testkit.Do(t, rdb, cmd...)
	}
	t.Cleanup(func() {
		lock.Unlock(held)
		fair.Unlock(fairHeld)
		rw.ReadLock().Unlock(readHeld)
		sem.Release(ctx, 1)
		exp.Release(ctx, ids...)
	})

	var got map[string]listed
	testkit.Eventually(t, 20*time.Second, func() error { // until every waiter has recorded itself
		got = listJSON(t, addr)
		for _, name := range []string{"ls-lock", "ls-fair", "ls-sem"} {
			if w := got[name].Waiters; w == nil || *w != 1 {
				return fmt.Errorf("%s: waiters %v, want 1; list: %v", name, w, got)
			}
		}
		if got["ls-latch"].Kind == "" {
			return fmt.Errorf("latch not listed yet (its waiter subscribes): %v", got)
		}
		return nil
	})
	want := map[string]struct {
		kind    string
		holders int
		detail  string
	}{
		"ls-lock":      {"lock", 1, ""},
		"ls-fair":      {"fair lock", 1, ""},
		"ls-rw":        {"read-write lock", 1, "mode read"},
		"ls-sem":       {"semaphore", -1, "0 available"},
		"ls-expirable": {"permit-expirable semaphore", 1, "2 available"},
		"ls-latch":     {"countdown latch", -1, "count 2"},
		"ls-rate":      {"rate limiter", -1, "10 per 1s, overall, 10 left"},
	}
	for name, w := range want {
		l, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s not listed", name)
			continue
		case l.Kind != w.kind || l.Detail != w.detail:
			t.Errorf("%s listed as %q (%q), want %q (%q)", name, l.Kind, l.Detail, w.kind, w.detail)
		case w.holders >= 0 && (l.Holders == nil || *l.Holders != w.holders):
			t.Errorf("%s: holders %v, want %d", name, l.Holders, w.holders)
		case w.holders < 0 && l.Holders != nil:
			t.Errorf("%s: holders %d, want none", name, *l.Holders)
		}
	}
	if l := got["ls-lock"]; l.TTLms == nil || *l.TTLms <= 0 || *l.TTLms > 20_000 {
		t.Errorf("ls-lock: TTL %v, want the watchdog's lease", l.TTLms)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s listed: %+v", name, got[name])
		}
	}

	// A server whose SCAN has no TYPE (before Redis 6) is walked once, with each key's TYPE: the
	// same objects.
	for _, typed := range []bool{true, false} {
		l := newLister(ctx, tg.Redis(t), "", "*", defaultMaxKeys)
		l.typed = typed
		found, err := l.list()
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]string{}
		for _, f := range found {
			kinds[f.Name] = f.Kind
		}
		for name, w := range want {
			if kinds[name] != w.kind {
				t.Errorf("SCAN with TYPE %v: %s listed as %q, want %q", typed, name, kinds[name], w.kind)
			}
		}
		if len(kinds) != len(want) {
			t.Errorf("SCAN with TYPE %v: listed %v", typed, kinds)
		}
	}

	// A pattern narrows it; the table has a row per object.
	if got := listJSON(t, addr, "ls-f*"); len(got) != 1 || got["ls-fair"].Kind != "fair lock" {
		t.Errorf("list ls-f*: %v, want the fair lock alone", got)
	}
	p := tool(t, addr, "list", "ls-*")
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	if len(lines) != 1+len(want) || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", p.stdout.String())
	}
	t.Logf("\n%s", p.stdout.String())
}

func TestListUsage(t *testing.T) {
	p := tool(t, "127.0.0.1:1", "list", "a", "b")
	if code := p.run(); code != exitUsage {
		t.Fatalf("two patterns: %v", p)
	}
	p = tool(t, "127.0.0.1:1", "list")
	if code := p.run(); code != exitUnavailable {
		t.Fatalf("no server: %v", p)
	}
}

// TestListCluster: on a cluster, list walks every master and finds each object once, side keys
// and waiters' channels in their slots included.
func TestListCluster(t *testing.T) {
	tg := testkit.Cluster(t)
	addrs := strings.Join(tg.Addrs, ",")
	ctx := context.Background()
	c, other := tg.Client(t), tg.Client(t)
	var names []string
	for i := range 6 { // names in several slots, of several masters
		name := fmt.Sprintf("lscl-lock-%d", i)
		l := must(rlock.New(c, name))
		held := must(l.Lock(ctx))
		t.Cleanup(func() { l.Unlock(held) })
		names = append(names, name)
	}
	fair := must(fairlock.New(c, "lscl-fair"))
	fairHeld := must(fair.Lock(ctx))
	fairWaiter := must(fairlock.New(other, "lscl-fair"))
	background(t, func(ctx context.Context) {
		if h, err := fairWaiter.Lock(ctx); err == nil {
			fairWaiter.Unlock(h)
		}
	})
	latch := must(countdown.New(c, "lscl-latch"))
	must(latch.TrySetCount(ctx, 1))
	t.Cleanup(func() { latch.Delete(context.Background()) })
	background(t, func(ctx context.Context) { latch.Await(ctx) })
	t.Cleanup(func() { fair.Unlock(fairHeld) })

	testkit.Eventually(t, 20*time.Second, func() error {
		got := listJSON(t, addrs, "lscl-*")
		for _, name := range names {
			if got[name].Kind != "lock" {
				return fmt.Errorf("%s: %+v", name, got[name])
			}
		}
		if l := got["lscl-fair"]; l.Kind != "fair lock" || l.Waiters == nil || *l.Waiters != 1 {
			return fmt.Errorf("lscl-fair: %+v", l)
		}
		if l := got["lscl-latch"]; l.Kind != "countdown latch" || l.Detail != "count 1" {
			return fmt.Errorf("lscl-latch: %+v", l)
		}
		if len(got) != len(names)+2 {
			return fmt.Errorf("listed %v", got)
		}
		return nil
	})
}
