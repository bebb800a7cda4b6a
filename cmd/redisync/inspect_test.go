package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// inspectJSON runs 'redisync inspect --json name' and decodes its output; it also runs the text form
// and returns it.
func inspectJSON(t *testing.T, tg *testkit.Target, name string) (*state, string) {
	t.Helper()
	addrs := strings.Join(tg.Addrs, ",")
	p := tool(t, addrs, "inspect", "--json", name)
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	var st state
	if err := json.Unmarshal(p.stdout.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, p.stdout.String())
	}
	text := tool(t, addrs, "inspect", name)
	if code := text.run(); code != 0 {
		t.Fatalf("%v", text)
	}
	return &st, text.stdout.String()
}

func owner(c *redisync.Client, ctx context.Context) string {
	id, _ := redisync.OwnerID(ctx)
	return c.ID() + ":" + strconv.FormatInt(id, 10)
}

func within(ms *int64, lo, hi time.Duration) bool {
	return ms != nil && time.Duration(*ms)*time.Millisecond > lo && time.Duration(*ms)*time.Millisecond <= hi
}

func TestInspectLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t, redisync.WithWatchdogTimeout(10*time.Second))
		l, _ := rlock.New(c, "inspect-lock", rlock.WithFencing())
		ctx := context.Background()
		held, err := l.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		again, err := l.Lock(held)
		if err != nil {
			t.Fatal(err)
		}
		token, _ := l.Token(again)

		st, text := inspectJSON(t, tg, "inspect-lock")
		if st.Kind != "lock" || len(st.Holders) != 1 || st.Holders[0].Owner != owner(c, held) || st.Holders[0].Count != 2 {
			t.Errorf("got %+v, want the lock held twice by %s", st, owner(c, held))
		}
		if !within(st.TTLms, 5*time.Second, 10*time.Second) {
			t.Errorf("ttl %v, want within the 10s watchdog timeout", st.TTLms)
		}
		if st.FencingToken == nil || *st.FencingToken != token {
			t.Errorf("fencing token %v, want %d", st.FencingToken, token)
		}
		for _, want := range []string{"inspect-lock: lock, held, expires in", "holder " + owner(c, held) + "  count 2", "last fencing token: " + strconv.FormatInt(token, 10)} {
			if !strings.Contains(text, want) {
				t.Errorf("text output lacks %q:\n%s", want, text)
			}
		}
		// A waiter, which records itself.
		other := tg.Client(t)
		lw, _ := rlock.New(other, "inspect-lock")
		wctx, cancel := context.WithCancel(context.Background())
		waiter := redisync.WithOwner(wctx)
		waited := make(chan error, 1)
		go func() {
			h, err := lw.Lock(waiter)
			if err == nil {
				lw.Unlock(h)
			}
			waited <- err
		}()
		testkit.Eventually(t, 10*time.Second, func() error {
			st, text = inspectJSON(t, tg, "inspect-lock")
			if len(st.Waiters) != 1 || st.Waiters[0].Owner != owner(other, waiter) || st.Waiters[0].Deadline == nil ||
				!strings.Contains(text, "waiters: 1\n    "+owner(other, waiter)+"  tries again within") {
				return fmt.Errorf("waiters %+v, want %s\n%s", st.Waiters, owner(other, waiter), text)
			}
			return nil
		})
		cancel()
		if err := <-waited; err == nil {
			t.Fatal("the waiter acquired a held lock")
		}
		l.Unlock(again)
		l.Unlock(held)
		st, _ = inspectJSON(t, tg, "inspect-lock")
		if st.Kind != "lock" || len(st.Holders) != 0 || st.TTLms != nil {
			t.Errorf("after unlock: %+v, want a free lock (with its fencing counter)", st)
		}
		testkit.Do(t, tg.Redis(t), "DEL", "redisson_lock_token:{inspect-lock}")
		st, text = inspectJSON(t, tg, "inspect-lock")
		if st.Kind != "none" || len(st.Keys) != 0 || !strings.Contains(text, "nothing stored") {
			t.Errorf("nothing left: %+v\n%s", st, text)
		}
	})
}

// TestInspectFairLock reads a queue written by hand, as a Java process would leave it: a holder, a
// waiter with a deadline ahead, and one whose deadline has passed. Reading it drops nobody.
func TestInspectFairLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		name := "inspect-fair"
		queue, timeout := "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}"
		t.Cleanup(func() {
			testkit.Do(t, rdb, "DEL", name)
			testkit.Do(t, rdb, "DEL", queue)
			testkit.Do(t, rdb, "DEL", timeout)
		})
		now := time.Now().UnixMilli()
		testkit.Do(t, rdb, "HSET", name, "java-uuid:1", "1")
		testkit.Do(t, rdb, "PEXPIRE", name, "30000")
		testkit.Do(t, rdb, "RPUSH", queue, "java-uuid:7", "java-uuid:8")
		testkit.Do(t, rdb, "ZADD", timeout, strconv.FormatInt(now-1000, 10), "java-uuid:7", strconv.FormatInt(now+300000, 10), "java-uuid:8")

		st, text := inspectJSON(t, tg, name)
		if st.Kind != "fair lock" || len(st.Holders) != 1 || st.Holders[0].Owner != "java-uuid:1" {
			t.Fatalf("got %+v", st)
		}
		if len(st.Queue) != 2 || st.Queue[0].Owner != "java-uuid:7" || st.Queue[1].Owner != "java-uuid:8" {
			t.Fatalf("queue %+v, want java-uuid:7 then java-uuid:8", st.Queue)
		}
		if d := st.Queue[0].Deadline; d == nil || *d >= 0 {
			t.Errorf("first waiter's deadline %v, want passed", d)
		}
		if !within(st.Queue[1].Deadline, 250*time.Second, 300*time.Second) {
			t.Errorf("second waiter's deadline %v, want about 5 minutes ahead", st.Queue[1].Deadline)
		}
		for _, want := range []string{"queue: 2 in line, 1 of them past their deadline", "1. java-uuid:7  deadline passed", "2. java-uuid:8  must try again within 4m"} {
			if !strings.Contains(text, want) {
				t.Errorf("text output lacks %q:\n%s", want, text)
			}
		}
		if got := testkit.DoString(t, rdb, "LRANGE", queue, "0", "-1"); got != "java-uuid:7\njava-uuid:8" {
			t.Errorf("inspect changed the queue: %q", got)
		}

		// And a queue our fair lock writes: a holder, and a waiter that lines up behind it.
		c := tg.Client(t)
		fl, _ := fairlock.New(c, "inspect-fair2")
		held, err := fl.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waiting := make(chan error, 1)
		waiter := redisync.WithOwner(wctx)
		go func() {
			h, err := fl.Lock(waiter)
			if err == nil {
				fl.Unlock(h)
			}
			waiting <- err
		}()
		testkit.Eventually(t, 5*time.Second, func() error {
			if n, _ := fl.Waiting(context.Background()); n != 1 {
				return errorString("waiter not in line")
			}
			return nil
		})
		st, _ = inspectJSON(t, tg, "inspect-fair2")
		if st.Kind != "fair lock" || len(st.Holders) != 1 || st.Holders[0].Owner != owner(c, held) ||
			len(st.Queue) != 1 || st.Queue[0].Owner != owner(c, waiter) || !within(st.Queue[0].Deadline, 0, fairlock.DefaultSlot+time.Minute) {
			t.Errorf("got %+v", st)
		}
		fl.Unlock(held)
		if err := <-waiting; err != nil {
			t.Fatal(err)
		}
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestInspectReadWriteLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t, redisync.WithWatchdogTimeout(10*time.Second))
		rw, _ := rwlock.New(c, "inspect-rw")
		r := rw.ReadLock()
		a, err := r.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		a2, _ := r.Lock(a)
		b, err := r.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st, text := inspectJSON(t, tg, "inspect-rw")
		if st.Kind != "read-write lock" || st.Mode != "read" || len(st.Holders) != 2 {
			t.Fatalf("got %+v", st)
		}
		counts := map[string]int{}
		for _, h := range st.Holders {
			counts[h.Owner] = len(h.Leases)
			if h.Write || int64(len(h.Leases)) != h.Count {
				t.Errorf("reader %+v: want one lease per hold", h)
			}
			for _, ms := range h.Leases {
				if !within(&ms, 5*time.Second, 10*time.Second) {
					t.Errorf("reader %s lease %dms, want within the 10s watchdog timeout", h.Owner, ms)
				}
			}
		}
		if counts[owner(c, a)] != 2 || counts[owner(c, b)] != 1 {
			t.Errorf("holds %v, want 2 for %s and 1 for %s", counts, owner(c, a), owner(c, b))
		}
		if !strings.Contains(text, "read-write lock, held for read") || !strings.Contains(text, "reader "+owner(c, a)+"  count 2  leases ") {
			t.Errorf("text output:\n%s", text)
		}
		for _, h := range []context.Context{a2, a, b} {
			if err := r.Unlock(h); err != nil {
				t.Fatal(err)
			}
		}

		w, err := rw.WriteLock().Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st, text = inspectJSON(t, tg, "inspect-rw")
		if st.Kind != "read-write lock" || st.Mode != "write" || len(st.Holders) != 1 || !st.Holders[0].Write || st.Holders[0].Owner != owner(c, w) {
			t.Errorf("got %+v", st)
		}
		if !strings.Contains(text, "held for write") || !strings.Contains(text, "writer "+owner(c, w)+"  count 1") {
			t.Errorf("text output:\n%s", text)
		}
		rw.WriteLock().Unlock(w)

		// Writer preference: a waiting writer is shown, keeping new readers out.
		pref, _ := rwlock.New(c, "inspect-rw-pref", rwlock.WithWriterPreference())
		rh, err := pref.ReadLock().Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(context.Background())
		writer := redisync.WithOwner(wctx)
		waited := make(chan error, 1)
		go func() {
			_, err := pref.WriteLock().Lock(writer)
			waited <- err
		}()
		testkit.Eventually(t, 5*time.Second, func() error {
			st, _ := inspectJSON(t, tg, "inspect-rw-pref")
			if len(st.WaitingWriters) != 1 || st.WaitingWriters[0].Owner != owner(c, writer) {
				return errorString("no waiting writer shown")
			}
			return nil
		})
		_, text = inspectJSON(t, tg, "inspect-rw-pref")
		if !strings.Contains(text, "writers waiting, keeping new readers out: 1") {
			t.Errorf("text output:\n%s", text)
		}
		cancel()
		if err := <-waited; err == nil {
			t.Fatal("the writer got in beside a reader")
		}
		pref.ReadLock().Unlock(rh)
	})
}

func TestInspectSemaphore(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		ctx := context.Background()
		s, _ := semaphore.New(c, "inspect-sem")
		t.Cleanup(func() { testkit.Do(t, tg.Redis(t), "DEL", "inspect-sem") })
		s.TrySetPermits(ctx, 2)
		if err := s.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		// Alone, a count could be a latch's.
		st, text := inspectJSON(t, tg, "inspect-sem")
		if st.Kind != "semaphore or countdown latch" || st.Available == nil || *st.Available != 0 || !strings.Contains(text, "value 0") {
			t.Errorf("got %+v\n%s", st, text)
		}
		// A waiter tells.
		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		testkit.Eventually(t, 5*time.Second, func() error {
			if st, _ := inspectJSON(t, tg, "inspect-sem"); st.Kind != "semaphore" || *st.Available != 0 {
				return errorString("not seen as a semaphore: " + st.Kind)
			}
			return nil
		})
		testkit.Eventually(t, 5*time.Second, func() error { // the waiter records itself once subscribed
			if st, _ := inspectJSON(t, tg, "inspect-sem"); len(st.Waiters) != 1 || st.Subscribers == nil || *st.Subscribers < 1 {
				return fmt.Errorf("waiters %+v, subscribers %v", st.Waiters, st.Subscribers)
			}
			return nil
		})
		_, text = inspectJSON(t, tg, "inspect-sem")
		if !strings.Contains(text, "inspect-sem: semaphore") || !strings.Contains(text, "available permits: 0") ||
			!strings.Contains(text, "waiters: 1") || !strings.Contains(text, "processes waiting (subscribers of its channel): 1") {
			t.Errorf("text output:\n%s", text)
		}
		s.Release(ctx, 2)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s.Release(ctx, 1)
	})
}

func TestInspectExpirableSemaphore(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := "inspect-exp"
		t.Cleanup(func() { testkit.Do(t, rdb, "DEL", name); testkit.Do(t, rdb, "DEL", "{"+name+"}:timeout") })
		leased, _ := semaphore.NewExpirable(c, name, semaphore.WithLease(time.Minute))
		forever, _ := semaphore.NewExpirable(c, name)
		leased.TrySetPermits(ctx, 5)
		a, err := leased.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := forever.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		// A permit whose lease has ended, not yet returned by any operation (Java-style, by hand).
		testkit.Do(t, rdb, "ZADD", "{"+name+"}:timeout", strconv.FormatInt(time.Now().UnixMilli()-5000, 10), "00112233445566778899aabbccddeeff")
		testkit.Do(t, rdb, "DECR", name)

		st, text := inspectJSON(t, tg, name)
		if st.Kind != "permit-expirable semaphore" || st.Available == nil || *st.Available != 3 || len(st.Permits) != 3 {
			t.Fatalf("got %+v, want 3 available (2 + 1 expired) and 3 permits", st)
		}
		byID := map[string]permit{}
		for _, p := range st.Permits {
			byID[p.ID] = p
		}
		if p := byID[a[0]]; p.Never || p.Expires <= 50000 || p.Expires > 60000 {
			t.Errorf("leased permit %+v, want to expire in about a minute", p)
		}
		if p := byID[b[0]]; !p.Never {
			t.Errorf("permit without lease %+v, want never_expires", p)
		}
		if p := byID["00112233445566778899aabbccddeeff"]; p.Never || p.Expires >= 0 {
			t.Errorf("expired permit %+v", p)
		}
		for _, want := range []string{"available permits: 3", "acquired permits: 3", b[0] + "  never expires", a[0] + "  expires in 5", "back in the pool at the next operation"} {
			if !strings.Contains(text, want) {
				t.Errorf("text output lacks %q:\n%s", want, text)
			}
		}
		if got := testkit.DoString(t, rdb, "ZCARD", "{"+name+"}:timeout"); got != "3" {
			t.Errorf("inspect returned the expired permit: %s left", got)
		}
		if err := leased.Release(ctx, a[0], b[0]); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInspectLatch(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		ctx := context.Background()
		l, _ := countdown.New(c, "inspect-latch")
		l.TrySetCount(ctx, 3)
		done := make(chan error, 1)
		go func() { done <- l.Await(ctx) }()
		testkit.Eventually(t, 5*time.Second, func() error {
			if st, _ := inspectJSON(t, tg, "inspect-latch"); st.Kind != "countdown latch" || *st.Count != 3 {
				return errorString("not seen as a latch: " + st.Kind)
			}
			return nil
		})
		_, text := inspectJSON(t, tg, "inspect-latch")
		if !strings.Contains(text, "inspect-latch: countdown latch") || !strings.Contains(text, "count: 3") ||
			!strings.Contains(text, "processes waiting (subscribers of its channel): 1") {
			t.Errorf("text output:\n%s", text)
		}
		for range 3 {
			l.CountDown(ctx)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st, _ := inspectJSON(t, tg, "inspect-latch"); st.Kind != "none" {
			t.Errorf("an open latch: %+v", st)
		}
	})
}

// TestInspectForeignKeys: keys that are no primitive's are shown by type and size, never by content,
// and are left as they were.
func TestInspectForeignKeys(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	testkit.Do(t, rdb, "RPUSH", "inspect-list", "a")
	testkit.Do(t, rdb, "SET", "session", "hunter2-secret")
	testkit.Do(t, rdb, "HSET", "user:1", "password", "hunter3-secret", "name", "x")
	testkit.Do(t, rdb, "HSET", "user:2", "a:b", "hunter4-secret")
	for _, tc := range []struct{ name, want string }{
		{"inspect-list", "a list of 1 elements"},
		{"session", "a string of 14 bytes"},
		{"user:1", "a hash of 2 elements"},
		{"user:2", "a hash of 1 elements"},
	} {
		p := tool(t, tg.Addrs[0], "inspect", tc.name)
		if code := p.run(); code != exitDataErr || !strings.Contains(p.stdout.String(), tc.want) {
			t.Errorf("want exit %d and %q\n%v", exitDataErr, tc.want, p)
		}
		j := tool(t, tg.Addrs[0], "inspect", "--json", tc.name)
		j.run()
		for _, out := range []string{p.stdout.String() + p.stderr.String(), j.stdout.String() + j.stderr.String()} {
			if strings.Contains(out, "secret") || strings.Contains(out, "password") {
				t.Errorf("inspect %s shows content: %s", tc.name, out)
			}
		}
	}
	if got := testkit.DoString(t, rdb, "LRANGE", "inspect-list", "0", "-1"); !strings.Contains(got, "a") {
		t.Errorf("inspect changed the list: %s", got)
	}
	if got := testkit.DoString(t, rdb, "GET", "session"); got != "hunter2-secret" {
		t.Errorf("inspect changed the string: %s", got)
	}
}

// TestInspectEscapes: a field or name with escape sequences and newlines cannot forge output lines.
func TestInspectEscapes(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	forged := "x:1\n  holder FORGED  count 9\x1b[2J"
	testkit.Do(t, rdb, "HSET", "esc", forged, "1")
	p := tool(t, tg.Addrs[0], "inspect", "esc")
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	out := p.stdout.String()
	if strings.Contains(out, "\x1b") || strings.Count(out, "\n") != 2 || !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("control characters reach the terminal: %q", out)
	}
}
