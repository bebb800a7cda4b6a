package rlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// slow makes a waiter's own tries rare: only a wake-up or a hand-over can be prompt.
var slow = redisync.WithRecheckInterval(time.Minute)

func newLock(t testing.TB, c *redisync.Client, name string, opts ...rlock.Option) *rlock.Lock {
	t.Helper()
	l, err := rlock.New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustLock(t testing.TB, l *rlock.Lock, ctx context.Context) context.Context {
	t.Helper()
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	return held
}

func mustUnlock(t testing.TB, l *rlock.Lock, ctx context.Context) {
	t.Helper()
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// A counter kept in the test process, read and written inside the section with a pause between, so
// that any overlap loses an increment as well as showing up in the overlap detector.
type racyCounter struct {
	mu sync.Mutex
	v  int
}

func (c *racyCounter) incr() {
	c.mu.Lock()
	v := c.v
	c.mu.Unlock()
	time.Sleep(20 * time.Microsecond)
	c.mu.Lock()
	c.v = v + 1
	c.mu.Unlock()
}

func TestMutualExclusionGoroutines(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "mutex-goroutines")
		var sec testkit.Section
		var ctr racyCounter
		var wg sync.WaitGroup
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					held, err := l.Lock(context.Background()) // a fresh owner each time
					if err != nil {
						t.Error(err)
						return
					}
					sec.Enter()
					ctr.incr()
					sec.Leave()
					if err := l.Unlock(held); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if sec.Max() != 1 {
			t.Fatalf("%d owners were inside the section at once", sec.Max())
		}
		if ctr.v != 16*200 {
			t.Fatalf("counter = %d, want %d", ctr.v, 16*200)
		}
	})
}

func TestMutualExclusionClients(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		var sec testkit.Section
		var ctr racyCounter
		var wg sync.WaitGroup
		for m := 0; m < 8; m++ {
			l := newLock(t, tg.Client(t), "mutex-clients")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					err := l.Do(context.Background(), func(ctx context.Context) error {
						sec.Enter()
						defer sec.Leave()
						ctr.incr()
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
		if sec.Max() != 1 || ctr.v != 800 {
			t.Fatalf("max inside %d (want 1), counter %d (want 800)", sec.Max(), ctr.v)
		}
	})
}

func TestReentry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "reentry")
		other := newLock(t, tg.Client(t), "reentry")
		count := func(ctx context.Context) int {
			n, err := l.HoldCount(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		h1 := mustLock(t, l, context.Background())
		if n := count(h1); n != 1 {
			t.Fatalf("hold count %d, want 1", n)
		}
		h2 := mustLock(t, l, h1) // same owner: re-entry
		if n := count(h2); n != 2 {
			t.Fatalf("hold count %d, want 2", n)
		}
		mustUnlock(t, l, h2)
		if n := count(h1); n != 1 {
			t.Fatalf("hold count %d, want 1", n)
		}
		if _, err := other.TryLock(context.Background(), 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("another owner got the lock while it was held once: %v", err)
		}
		if h2.Err() != nil && h1.Err() == nil {
			// the inner hold's ctx ends at its own release, the outer one lives on
		} else {
			t.Fatalf("inner ctx err %v, outer ctx err %v", h2.Err(), h1.Err())
		}
		if !errors.Is(context.Cause(h2), redisync.ErrReleased) {
			t.Fatalf("inner ctx cause %v, want ErrReleased", context.Cause(h2))
		}
		mustUnlock(t, l, h1)
		if n := count(h1); n != 0 {
			t.Fatalf("hold count %d, want 0", n)
		}
		if !errors.Is(context.Cause(h1), redisync.ErrReleased) {
			t.Fatalf("outer ctx cause %v, want ErrReleased", context.Cause(h1))
		}
		h3, err := other.TryLock(context.Background(), 0)
		if err != nil {
			t.Fatalf("another owner could not take the released lock: %v", err)
		}
		mustUnlock(t, other, h3)
	})
}

func TestNonReentrant(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "non-reentrant", rlock.NonReentrant())
		held := mustLock(t, l, context.Background())
		if _, err := l.TryLock(held, time.Second); !errors.Is(err, redisync.ErrAlreadyHeld) {
			t.Fatalf("re-entry: %v, want ErrAlreadyHeld", err)
		}
		if _, err := l.Lock(held); !errors.Is(err, redisync.ErrAlreadyHeld) {
			t.Fatalf("re-entry with Lock: %v, want ErrAlreadyHeld", err)
		}
		if n, _ := l.HoldCount(held); n != 1 {
			t.Fatalf("hold count after refused re-entry %d, want 1", n)
		}
		if held.Err() != nil {
			t.Fatalf("refused re-entry ended the hold: %v", context.Cause(held))
		}
		mustUnlock(t, l, held)
	})
}

func TestUnlockByNonOwner(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLock(t, c, "non-owner")
		held := mustLock(t, l, context.Background())
		for name, ctx := range map[string]context.Context{
			"plain ctx":         context.Background(),
			"another owner":     redisync.WithOwner(context.Background()),
			"other client same": held, // the same owner id, but another client: another machine
		} {
			lk := l
			if name == "other client same" {
				lk = newLock(t, tg.Client(t), "non-owner")
			}
			if err := lk.Unlock(ctx); !errors.Is(err, redisync.ErrNotHeld) {
				t.Fatalf("%s: Unlock = %v, want ErrNotHeld", name, err)
			}
		}
		if n, _ := l.HoldCount(held); n != 1 || held.Err() != nil {
			t.Fatalf("a refused unlock changed the hold: count %d, ctx %v", n, context.Cause(held))
		}
		mustUnlock(t, l, held)
		if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("second Unlock = %v, want ErrNotHeld", err)
		}
	})
}

func TestFixedLease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t), "lease", rlock.WithLease(time.Second))
		other := newLock(t, tg.Client(t), "lease")
		start := time.Now()
		held := mustLock(t, l, context.Background())
		end := time.Now()
		dl, ok := held.Deadline()
		// The lease's end less the drift allowance, counted from when the acquiring command was sent.
		valid := time.Second - core.Drift(time.Second)
		if !ok || dl.Before(start.Add(valid)) || dl.After(end.Add(valid)) {
			t.Fatalf("hold ctx deadline %v after Lock began, want %v after the acquiring command", dl.Sub(start), valid)
		}
		h2, err := other.TryLock(context.Background(), 20*time.Second)
		if err != nil {
			t.Fatalf("waiter did not get the lock after the lease: %v", err)
		}
		if held.Err() == nil {
			t.Fatal("the waiter got the lock while the old holder's ctx was still live")
		}
		<-held.Done()
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("old holder's ctx cause %v, want ErrLost", context.Cause(held))
		}
		if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("old holder's Unlock = %v, want ErrNotHeld", err)
		}
		mustUnlock(t, other, h2)
	})
}

func TestWatchdog(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const timeout = time.Second
		rdb := tg.Redis(t)
		c := tg.Client(t, redisync.WithWatchdogTimeout(timeout))
		l := newLock(t, c, "watchdog")
		held := mustLock(t, l, context.Background())
		acquired := time.Now()
		// Renewals push the key's expiry on, past the end of the first lease (which the client counts
		// from when the acquisition was sent, before Lock returned).
		testkit.AwaitRenewals(t, rdb, "watchdog", 2)
		for time.Since(acquired) < timeout {
			testkit.AwaitRenewals(t, rdb, "watchdog", 1)
		}
		if held.Err() != nil {
			t.Fatalf("hold ended while the watchdog should keep it: %v", context.Cause(held))
		}
		if ttl, err := l.TTL(held); err != nil || ttl <= 0 || ttl > timeout {
			t.Fatalf("TTL after renewals = %v, %v; want in (0, %v]", ttl, err, timeout)
		}
		mustUnlock(t, l, held)
		if n := testkit.Renewals(c); n != 0 {
			t.Fatalf("%d holds still renewed after Unlock", n)
		}
		// A renewal round in flight at Unlock (it lasts a third of the timeout at most) finds the hold
		// gone: the key does not come back.
		for end := time.Now().Add(timeout / 2); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if n := testkit.DoString(t, rdb, "EXISTS", "watchdog"); mustInt(t, n) != 0 {
				t.Fatal("the key came back after Unlock")
			}
		}
	})
}

func TestWatchdogClientClosed(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t, redisync.WithWatchdogTimeout(time.Second))
		l := newLock(t, c, "closed-holder")
		held := mustLock(t, l, context.Background())
		c.Close() // as if the process died: no Unlock
		if !errors.Is(context.Cause(held), redisync.ErrClosed) {
			t.Fatalf("holder ctx cause after Close %v, want ErrClosed", context.Cause(held))
		}
		// Nothing renews the key after Close (a round in flight at Close may land once): its expiry
		// stays put until it expires.
		last, rises := int64(1<<62), 0
		testkit.Eventually(t, 20*time.Second, func() error {
			ms := mustInt(t, testkit.DoString(t, rdb, "PTTL", "closed-holder"))
			if ms < 0 {
				return nil
			}
			if ms > last {
				if rises++; rises > 1 {
					t.Fatalf("the lock of a closed client was renewed %d times", rises)
				}
			}
			last = ms
			return errors.New("still locked")
		})
		other := newLock(t, tg.Client(t), "closed-holder")
		h2, err := other.TryLock(context.Background(), 0)
		if err != nil {
			t.Fatalf("lock of a closed client not free once its key expired: %v", err)
		}
		mustUnlock(t, other, h2)
	})
}

func TestWatchdogFindsLockGone(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		l := newLock(t, tg.Client(t, redisync.WithWatchdogTimeout(900*time.Millisecond)), "deleted")
		held := mustLock(t, l, context.Background())
		testkit.Do(t, rdb, "DEL", "deleted")
		select {
		case <-held.Done():
		case <-time.After(10 * time.Second): // one renewal period is 300 ms
			t.Fatal("holder's ctx not cancelled after the key was deleted")
		}
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("cause %v, want ErrLost", context.Cause(held))
		}
		if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("Unlock after loss = %v, want ErrNotHeld", err)
		}
	})
}

// parked waits until a goroutine of c waits for a release of lock name, its channel subscribed.
func parked(t *testing.T, c *redisync.Client, name string) {
	t.Helper()
	n, channel := core.Of(c).Notifier(), "redisson_lock__channel:{"+name+"}"
	testkit.Eventually(t, 10*time.Second, func() error {
		if n.Waiting(channel) == 0 || !n.Subscribed(channel) {
			return errors.New("no waiter parked on " + channel)
		}
		return nil
	})
}

func TestWaiterWokenByRelease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		// A long recheck interval and watchdog lease: only the notification can be fast.
		l := newLock(t, tg.Client(t, slow), "handoff")
		oc := tg.Client(t, slow)
		other := newLock(t, oc, "handoff")
		held := mustLock(t, l, context.Background())
		got := make(chan time.Time, 1)
		var wg sync.WaitGroup
		wg.Add(1)
		defer wg.Wait()
		go func() {
			defer wg.Done()
			h2, err := other.Lock(context.Background())
			got <- time.Now()
			if err == nil {
				err = other.Unlock(h2)
			}
			if err != nil {
				t.Error(err)
			}
		}()
		parked(t, oc, "handoff")
		released := time.Now()
		mustUnlock(t, l, held)
		select {
		case at := <-got:
			t.Logf("waiter acquired %v after the release", at.Sub(released))
		case <-time.After(15 * time.Second): // its own next try is a minute away
			t.Fatal("waiter not woken by the release")
		}
	})
}

func TestWaiterAfterNotificationConnectionKilled(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		l := newLock(t, tg.Client(t, slow), "killed-pubsub")
		oc := tg.Client(t, slow)
		other := newLock(t, oc, "killed-pubsub")
		held := mustLock(t, l, context.Background())
		got := make(chan error, 1)
		go func() {
			h2, err := other.Lock(context.Background())
			if err == nil {
				err = other.Unlock(h2)
			}
			got <- err
		}()
		parked(t, oc, "killed-pubsub")
		for _, s := range tg.Servers {
			if _, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
				t.Fatal(err)
			}
		}
		mustUnlock(t, l, held) // the release message may be lost: nobody was subscribed
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("waiter still waiting after the notifier reconnected (lease is 30 s, recheck 1 min)")
		}
	})
}

func TestRedissonCompatibility(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t, slow)
		l := newLock(t, c, "java-shared")
		// A Java process holds the lock: hash field "<uuid>:<threadId>" = 1, with a lease.
		javaOwner := "3f1a7c2e-0000-4000-8000-000000000001:57"
		testkit.Do(t, rdb, "HSET", "java-shared", javaOwner, "1")
		testkit.Do(t, rdb, "PEXPIRE", "java-shared", "30000")
		if _, err := l.TryLock(context.Background(), 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("our lock ignored the Java holder: %v", err)
		}
		if locked, _ := l.IsLocked(context.Background()); !locked {
			t.Fatal("IsLocked false while Java holds it")
		}
		got := make(chan error, 1)
		go func() {
			held, err := l.Lock(context.Background())
			if err == nil {
				err = l.Unlock(held)
			}
			got <- err
		}()
		parked(t, c, "java-shared")
		// The Java process unlocks: DEL and publish 0 on its channel.
		testkit.Do(t, rdb, "DEL", "java-shared")
		pub := "PUBLISH"
		if tg.Name == "cluster" {
			pub = "SPUBLISH"
		}
		testkit.Do(t, rdb, pub, "redisson_lock__channel:{java-shared}", "0")
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Redisson's unlock message did not wake our waiter")
		}

		// Our hold is what a Java process reads as held.
		held := mustLock(t, l, context.Background())
		id, _ := redisync.OwnerID(held)
		field := c.ID() + ":" + strconv.FormatInt(id, 10)
		if v, err := testkit.DoString(t, rdb, "HGET", "java-shared", field), error(nil); err != nil || v != "1" {
			t.Fatalf("HGET %s = %v, want 1", field, v)
		}
		if ttl := mustInt(t, testkit.DoString(t, rdb, "PTTL", "java-shared")); ttl <= 0 || ttl > 30000 {
			t.Fatalf("PTTL %d, want the 30 s watchdog lease", ttl)
		}
		if typ := testkit.DoString(t, rdb, "TYPE", "java-shared"); typ != "hash" {
			t.Fatalf("TYPE %s, want hash", typ)
		}
		mustUnlock(t, l, held)
	})
}

func TestFencingTokens(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		testkit.Do(t, rdb, "DEL", "redisson_lock_token:{fenced}")
		a := newLock(t, tg.Client(t), "fenced", rlock.WithFencing())
		b := newLock(t, tg.Client(t), "fenced", rlock.WithFencing())
		var last int64
		next := func(l *rlock.Lock, ctx context.Context) {
			t.Helper()
			tok, ok := l.Token(ctx)
			if !ok || tok <= last {
				t.Fatalf("token %d (ok %v) after %d: not strictly increasing", tok, ok, last)
			}
			last = tok
		}
		for i := 0; i < 5; i++ {
			for _, l := range []*rlock.Lock{a, b} {
				h1 := mustLock(t, l, context.Background())
				next(l, h1)
				h2 := mustLock(t, l, h1) // re-entry takes a token too
				next(l, h2)
				mustUnlock(t, l, h2)
				mustUnlock(t, l, h1)
			}
		}
		if got := testkit.DoString(t, rdb, "GET", "redisson_lock_token:{fenced}"); got != strconv.FormatInt(last, 10) {
			t.Fatalf("counter in Redis %s, last token %d", got, last)
		}
		plain := newLock(t, tg.Client(t), "fenced")
		h := mustLock(t, plain, context.Background())
		if _, ok := plain.Token(h); ok {
			t.Fatal("a lock without WithFencing returned a token")
		}
		mustUnlock(t, plain, h)
	})
}

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
