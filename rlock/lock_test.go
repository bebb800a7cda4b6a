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

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
