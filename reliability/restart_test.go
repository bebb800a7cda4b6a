package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/spinlock"
)

// restartLocker is what every lock of a restart case offers.
type restartLocker interface {
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
}

// restartWindow bounds how long a holder may go on believing it holds a lock that a restart without
// persistence lost, counted from when another Client acquired it. The holder learns within about one
// reconnect: far less than the renewal period (10 s with the default watchdog) or a fixed lease
// (a minute here), which is how long it went on before; the bound leaves room for a busy machine.
const restartWindow = 2 * time.Second

// Row: the server is killed (kill -9) and restarted on the same port without persistence while
// locks of every kind are held, each with a waiter of another Client. Every holder, whether its lock
// is kept by the watchdog or has a fixed lease, learns within about one reconnect that its lock is
// gone (its ctx ends with ErrLost), not at its next renewal or at the end of its lease; the window
// in which the waiter, which acquires on the restarted server, and the old holder both believe they
// hold the lock is measured and bounded. Fencing tokens handed out after the restart are above every
// token handed out before it, although the restart lost the counter. Afterwards Redis holds nothing
// but the counters.
func TestRestartWithoutPersistence(t *testing.T) {
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	// Default options: the watchdog's 30 s (renewals every 10 s), the recheck interval's 5 s.
	a, b := tg.Client(t), tg.Client(t)
	type lockCase struct {
		name   string
		make   func(c *redisync.Client) restartLocker
		token  func(l restartLocker, held context.Context) (int64, bool)
		shared bool // B waits for a writer, A holds a read lock
	}
	token := func(l restartLocker, held context.Context) (int64, bool) {
		switch l := l.(type) {
		case *rlock.Lock:
			return l.Token(held)
		case *fairlock.Lock:
			return l.Token(held)
		case *spinlock.Lock:
			return l.Token(held)
		}
		return 0, false
	}
	must := func(l restartLocker, err error) restartLocker {
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cases := []lockCase{
		{name: "rlock", make: func(c *redisync.Client) restartLocker { return must(rlock.New(c, "rs-rlock", rlock.WithFencing())) }, token: token},
		{name: "rlock with a fixed lease", make: func(c *redisync.Client) restartLocker {
			return must(rlock.New(c, "rs-lease", rlock.WithLease(time.Minute)))
		}},
		{name: "spin lock", make: func(c *redisync.Client) restartLocker {
			return must(spinlock.New(c, "rs-spin", spinlock.WithFencing()))
		}, token: token},
		{name: "fair lock", make: func(c *redisync.Client) restartLocker {
			return must(fairlock.New(c, "rs-fair", fairlock.WithFencing()))
		}, token: token},
		{name: "write lock", make: func(c *redisync.Client) restartLocker {
			rw, err := rwlock.New(c, "rs-rw-w")
			return must(rw.WriteLock(), err)
		}},
		{name: "read lock", shared: true, make: func(c *redisync.Client) restartLocker {
			rw, err := rwlock.New(c, "rs-rw-r")
			return must(rw.ReadLock(), err)
		}},
		{name: "group lock", make: func(c *redisync.Client) restartLocker {
			return must(multilock.NewGroup(c, "rs-group", []string{"1", "2"}))
		}},
	}
	type holding struct {
		lockCase
		la, lb   restartLocker
		held     context.Context
		before   int64 // the highest token handed out before the restart
		waiting  chan testkit.Acquired
		acquired time.Time // when the waiter's TryLock returned
	}
	var all []*holding
	for _, tc := range cases {
		h := &holding{lockCase: tc, la: tc.make(a), lb: tc.make(b)}
		if tc.shared {
			rw, _ := rwlock.New(b, "rs-rw-r")
			h.lb = rw.WriteLock()
		}
		for range 3 { // tokens 1, 2, 3 (or wherever the counter is): the last one is kept
			if h.held != nil {
				if err := h.la.Unlock(h.held); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
			}
			held, err := h.la.TryLock(context.Background(), 10*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			h.held = held
			if tc.token != nil {
				tok, ok := tc.token(h.la, held)
				if !ok || tok <= h.before {
					t.Fatalf("%s: token %d (%v) after %d", tc.name, tok, ok, h.before)
				}
				h.before = tok
			}
		}
		h.waiting = make(chan testkit.Acquired, 1)
		go func() {
			ctx, err := h.lb.TryLock(context.Background(), time.Minute)
			h.acquired = time.Now()
			h.waiting <- testkit.Acquired{Ctx: ctx, Err: err}
		}()
		all = append(all, h)
	}
	// Every waiter has tried and waits (parked, or spinning).
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := testkit.Waiters(b); n < len(all)-1 { // the spin lock's waiter does not park
			return fmt.Errorf("%d waiters parked", n)
		}
		return nil
	})

	// When each side learnt what: the old holder's end, the waiter's acquisition.
	ended := map[string]chan time.Time{}
	for _, h := range all {
		ended[h.name] = make(chan time.Time, 1)
		go func() {
			<-h.held.Done()
			ended[h.name] <- time.Now()
		}()
	}
	restarted := time.Now()
	if err := srv.Restart(); err != nil { // SIGKILL, then the same port, no persistence
		t.Fatal(err)
	}
	var worst time.Duration
	for _, h := range all {
		r := <-h.waiting
		acquired := h.acquired
		if r.Err != nil {
			t.Fatalf("%s: the waiter: %v", h.name, r.Err)
		}
		var end time.Time
		select {
		case end = <-ended[h.name]:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the old holder still believes it holds the lock 10s after the waiter acquired it", h.name)
		}
		if cause := context.Cause(h.held); !errors.Is(cause, redisync.ErrLost) {
			t.Fatalf("%s: the old holder's ctx ended with %v, want ErrLost", h.name, cause)
		}
		window := max(end.Sub(acquired), 0)
		t.Logf("%s: the waiter acquired %v after the restart began; the old holder learnt it %v after the restart began: two holders for %v",
			h.name, acquired.Sub(restarted).Round(time.Millisecond), end.Sub(restarted).Round(time.Millisecond), window.Round(time.Millisecond))
		worst = max(worst, window)
		if window > restartWindow {
			t.Errorf("%s: two holders for %v after the restart, want at most %v", h.name, window, restartWindow)
		}
		if h.token != nil {
			if tok, ok := h.token(h.lb, r.Ctx); !ok || tok <= h.before {
				t.Errorf("%s: token %d after the restart, not above %d handed out before it", h.name, tok, h.before)
			}
		}
		if err := h.la.Unlock(h.held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Errorf("%s: the old holder's Unlock: %v, want ErrNotHeld", h.name, err)
		}
		if err := h.lb.Unlock(r.Ctx); err != nil {
			t.Errorf("%s: %v", h.name, err)
		}
	}
	t.Logf("longest window of two holders: %v", worst.Round(time.Millisecond))
	// What Redis holds: the fencing counters, nothing else.
	rdb := tg.Redis(t)
	testkit.Eventually(t, 10*time.Second, func() error {
		keys, err := rdb.Do(context.Background(), rdb.B().Keys().Pattern("*").Build()).AsStrSlice()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k != "redisson_lock_token:{rs-rlock}" && k != "redisson_lock_token:{rs-spin}" && k != "redisson_lock_token:{rs-fair}" {
				return fmt.Errorf("%s left in Redis (all: %v)", k, keys)
			}
		}
		return nil
	})
}

// A connection that ends while the server keeps its data (the network failed under it) has the
// holds checked too, and the check keeps them: a hold with a fixed lease is looked for and left as
// it was, one the watchdog keeps is renewed. Nothing is reported lost, and each Unlock releases.
func TestConnectionEndKeepsHolds(t *testing.T) {
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	proxy := redistest.StartProxy(t, srv.Addr)
	via := &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: tg.Servers}
	c := via.Client(t)
	watched := newLock(t, c, "cut-watched")
	fixed := newLock(t, c, "cut-fixed", rlock.WithLease(time.Minute))
	rw, err := rwlock.New(c, "cut-read", rwlock.WithLease(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	hw, hf := mustLock(t, watched), mustLock(t, fixed)
	hr, err := rw.ReadLock().TryLock(context.Background(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pttl := func(key string) int64 {
		n, err := strconv.ParseInt(testkit.DoString(t, tg.Redis(t), "PTTL", key), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	time.Sleep(50 * time.Millisecond) // the watched lock's TTL runs down a little
	before := pttl("cut-watched")
	checks := cmdCalls(t, srv, "evalsha") + cmdCalls(t, srv, "eval")
	proxy.Drop()
	dropped := time.Now()
	testkit.Eventually(t, 10*time.Second, func() error { // the renewal, and the two checks
		if n := cmdCalls(t, srv, "evalsha") + cmdCalls(t, srv, "eval") - checks; n < 3 {
			return fmt.Errorf("%d scripts since the connections ended", n)
		}
		if after := pttl("cut-watched"); after <= before {
			return fmt.Errorf("the watched lock's TTL went from %d to %d ms: not renewed", before, after)
		}
		return nil
	})
	t.Logf("holds checked %v after the connections ended", time.Since(dropped).Round(time.Millisecond))
	if left := pttl("cut-fixed"); left > 60_000 || left < 50_000 {
		t.Fatalf("the fixed lease has %d ms left: a check changed it", left)
	}
	for _, held := range []context.Context{hw, hf, hr} {
		if cause := context.Cause(held); cause != nil {
			t.Fatalf("a hold ended after its connection did: %v", cause)
		}
	}
	if err := watched.Unlock(hw); err != nil {
		t.Fatal(err)
	}
	if err := fixed.Unlock(hf); err != nil {
		t.Fatal(err)
	}
	if err := rw.ReadLock().Unlock(hr); err != nil {
		t.Fatal(err)
	}
}

// A Client made with Wrap does not see its connections end; while it has waiters, it checks its
// holds when its notifier subscribes again after the restart, and learns as promptly.
func TestRestartWrappedClientWithWaiters(t *testing.T) {
	tg := testkit.Own(t)
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rdb.Close)
	wrapped, err := redisync.Wrap(rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, wrapped) })
	other := tg.Client(t)
	mine := newLock(t, wrapped, "wrap-held")
	held := mustLock(t, mine)
	theirs := newLock(t, other, "wrap-waited")
	busy := mustLock(t, theirs)
	waiting := testkit.Background(func() (context.Context, error) {
		return newLock(t, wrapped, "wrap-waited").TryLock(context.Background(), time.Minute)
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		if testkit.Waiters(wrapped) == 0 {
			return fmt.Errorf("the waiter does not wait yet")
		}
		return nil
	})
	restarted := time.Now()
	if err := tg.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	// Counted from before the restart, which on a busy machine takes seconds of its own; half the
	// renewal period (the default watchdog's 10 s), at which it learnt before, still tells the two apart.
	const window = 5 * time.Second
	select {
	case <-held.Done():
	case <-time.After(window):
		t.Fatalf("the hold still believed held %v after the restart began", window)
	}
	if cause := context.Cause(held); !errors.Is(cause, redisync.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", cause)
	}
	t.Logf("the wrapped Client's holder learnt it %v after the restart began", time.Since(restarted).Round(time.Millisecond))
	// The waiter acquires on the restarted server; the other Client's hold was lost too.
	h := testkit.Await(t, waiting, "the waiter")
	if err := newLock(t, wrapped, "wrap-waited").Unlock(h); err != nil {
		t.Fatal(err)
	}
	if err := theirs.Unlock(busy); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("the other Client's Unlock of a lock the restart lost: %v, want ErrNotHeld", err)
	}
	if err := mine.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock of a lock the restart lost: %v, want ErrNotHeld", err)
	}
}
