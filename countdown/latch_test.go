package countdown

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// slow is a recheck interval no test may depend on: a waiter that returns within a few seconds was
// woken by a message or by a reconnect, not by its periodic re-check.
const slow = time.Minute

func newLatch(t *testing.T, c *redisync.Client, name string) *Latch {
	t.Helper()
	l, err := New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// subscribers returns how many connections, on every node of tg, follow channel.
func subscribers(tg *testkit.Target, channel string) (int, error) {
	total := 0
	for _, s := range tg.Servers {
		for _, cmd := range []string{"NUMSUB", "SHARDNUMSUB"} {
			out, err := s.Do("PUBSUB", cmd, channel)
			if err != nil {
				return 0, err
			}
			var k int
			if f := strings.Fields(out); len(f) == 2 {
				fmt.Sscan(f[1], &k)
			}
			total += k
		}
	}
	return total, nil
}

// waitSubscribed waits until every Redis node in tg reports n subscribers on channel, so that a test
// can be sure its waiters are parked before it acts.
func waitSubscribed(t *testing.T, tg *testkit.Target, channel string, n int) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() error {
		if k, err := subscribers(tg, channel); err != nil || k < n {
			return fmt.Errorf("%d subscriptions to %s (%v), want %d", k, channel, err, n)
		}
		return nil
	})
}

// waitUnsubscribed waits until no connection is subscribed to channel.
func waitUnsubscribed(t *testing.T, tg *testkit.Target, channel string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() error {
		if k, err := subscribers(tg, channel); err != nil || k != 0 {
			return fmt.Errorf("%d subscriptions to %s (%v), want none", k, channel, err)
		}
		return nil
	})
}

func TestTrySetCountCountDownDelete(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		l := newLatch(t, tg.Client(t), "latch-basic")
		if n, err := l.Count(ctx); err != nil || n != 0 {
			t.Fatalf("unset latch: Count = %d, %v; want 0", n, err)
		}
		if ok, err := l.TrySetCount(ctx, 3); err != nil || !ok {
			t.Fatalf("first TrySetCount = %v, %v; want true", ok, err)
		}
		if ok, err := l.TrySetCount(ctx, 5); err != nil || ok {
			t.Fatalf("second TrySetCount = %v, %v; want false", ok, err)
		}
		if n, _ := l.Count(ctx); n != 3 {
			t.Fatalf("Count = %d after a refused TrySetCount, want 3", n)
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := l.Count(ctx); n != 2 {
			t.Fatalf("Count = %d, want 2", n)
		}
		if ok, err := l.Delete(ctx); err != nil || !ok {
			t.Fatalf("Delete = %v, %v; want true", ok, err)
		}
		if ok, err := l.Delete(ctx); err != nil || ok {
			t.Fatalf("second Delete = %v, %v; want false", ok, err)
		}
		// Counting down an unset latch changes nothing, and leaves no key.
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		rdb := tg.Redis(t)
		if n, _ := rdb.Do(ctx, rdb.B().Exists().Key("latch-basic").Build()).AsInt64(); n != 0 {
			t.Fatal("CountDown on an unset latch created a key")
		}
		// Reaching zero removes the key, so the latch can be set again.
		if ok, _ := l.TrySetCount(ctx, 1); !ok {
			t.Fatal("TrySetCount refused on a deleted latch")
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, _ := l.TrySetCount(ctx, 1); !ok {
			t.Fatal("TrySetCount refused on a latch counted down to zero")
		}
		l.Delete(ctx)
	})
}

func TestAwaitUnsetReturnsAtOnce(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t, redisync.WithRecheckInterval(slow))
		l := newLatch(t, c, "latch-unset")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Await(ctx); err != nil {
			t.Fatalf("Await on an unset latch: %v", err)
		}
		if err := l.TryAwait(ctx, 0); err != nil {
			t.Fatalf("TryAwait(0) on an unset latch = %v; want nil", err)
		}
		if n := core.Of(c).Notifier().Channels(); n != 0 {
			t.Fatalf("Await on an open latch subscribed to %d channels", n)
		}
	})
}

func TestTryAwaitNotReached(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		l := newLatch(t, tg.Client(t, redisync.WithRecheckInterval(slow)), "latch-bound")
		l.TrySetCount(ctx, 1)
		defer l.Delete(ctx)
		if err := l.TryAwait(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryAwait(0) on count 1 = %v; want ErrNotAcquired", err)
		}
		start := time.Now()
		if err := l.TryAwait(ctx, 200*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("TryAwait(200ms) on count 1 = %v; want ErrNotAcquired", err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Fatalf("TryAwait gave up after %v, before its bound", d)
		}
		// A ctx that ends first is an error, not "not reached".
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := l.TryAwait(cctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("TryAwait with an expiring ctx: %v, want DeadlineExceeded", err)
		}
		if err := l.Await(cctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Await with an expired ctx: %v, want DeadlineExceeded", err)
		}
	})
}

func TestEveryWaiterOnEveryClientWakes(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const clients, perClient, count = 4, 5, 3
		ctx := context.Background()
		var latches []*Latch
		for range clients {
			latches = append(latches, newLatch(t, tg.Client(t, redisync.WithRecheckInterval(slow)), "latch-many"))
		}
		if ok, _ := latches[0].TrySetCount(ctx, count); !ok {
			t.Fatal("TrySetCount refused")
		}
		var (
			mu       sync.Mutex
			returned []time.Time
			wg       sync.WaitGroup
		)
		for _, l := range latches {
			for range perClient {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := l.Await(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					returned = append(returned, time.Now())
					mu.Unlock()
				}()
			}
		}
		waitSubscribed(t, tg, "redisson_countdownlatch__channel__{latch-many}", clients)
		for i := range count - 1 {
			if err := latches[i%clients].CountDown(ctx); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		early := len(returned)
		mu.Unlock()
		if early != 0 {
			t.Fatalf("%d waiters returned while the count was 1", early)
		}
		if err := latches[count%clients].CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		zero := time.Now()
		wg.Wait()
		var worst time.Duration
		for _, at := range returned {
			worst = max(worst, at.Sub(zero))
		}
		t.Logf("%d waiters on %d clients; the last returned %v after the last CountDown", len(returned), clients, worst)
		if len(returned) != clients*perClient {
			t.Fatalf("%d waiters returned, want %d", len(returned), clients*perClient)
		}
		// Generous for a loaded machine, and far below the recheck interval: the message woke them.
		if worst > 2*time.Second {
			t.Fatalf("a waiter returned %v after the count reached zero", worst)
		}
	})
}

// killSubscribers closes, on every node, the connections that follow a Pub/Sub channel, as a network
// fault would.
func killSubscribers(t *testing.T, tg *testkit.Target) {
	t.Helper()
	killed := 0
	for _, s := range tg.Servers {
		out, err := s.Do("CLIENT", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			var id string
			subscribed := false
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "id":
					id = v
				case "sub", "ssub", "psub":
					subscribed = subscribed || v != "0"
				}
			}
			if subscribed {
				if _, err := s.Do("CLIENT", "KILL", "ID", id); err == nil {
					killed++
				}
			}
		}
	}
	if killed == 0 {
		t.Fatal("no subscribed connection to kill")
	}
}

func TestWaiterSurvivesKilledNotificationConnection(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		const ch = "redisson_countdownlatch__channel__{latch-killed}"
		waiter := newLatch(t, tg.Client(t, redisync.WithRecheckInterval(slow)), "latch-killed")
		other := newLatch(t, tg.Client(t), "latch-killed")
		rdb := tg.Redis(t)
		await := func() <-chan error {
			done := make(chan error, 1)
			go func() { done <- waiter.Await(ctx) }()
			waitSubscribed(t, tg, ch, 1)
			return done
		}
		expect := func(done <-chan error, what string) {
			t.Helper()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("waiter still waiting %s (recheck interval %v)", what, slow)
			}
		}

		// The connection dies, then the count reaches zero: the message may be lost.
		other.TrySetCount(ctx, 1)
		done := await()
		killSubscribers(t, tg)
		if err := other.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		expect(done, "after a CountDown during a reconnect")

		// The count reaches zero with no message at all (as if it were lost), then the connection
		// dies: the waiter can only learn it by checking again when it is back. The count must be
		// deleted only once the waiter has made both its tries (before and after subscribing), so
		// that no try of its own can see it: wait for the channel's lingering subscription to end,
		// so that the waiter makes two, and for the server to have run them.
		waitUnsubscribed(t, tg, ch)
		other.TrySetCount(ctx, 1)
		gets := tg.Calls(t, "get")
		done = await()
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := tg.Calls(t, "get") - gets; n < 2 {
				return fmt.Errorf("waiter made %d tries, want 2", n)
			}
			return nil
		})
		testkit.Do(t, rdb, "DEL", "latch-killed")
		select {
		case <-done:
			t.Fatal("waiter returned with no message and no reconnect")
		case <-time.After(100 * time.Millisecond):
		}
		killSubscribers(t, tg)
		expect(done, "after the notification connection came back")
	})
}

func TestRecheckWithoutMessage(t *testing.T) {
	tg := testkit.Standalone(t)
	ctx := context.Background()
	l := newLatch(t, tg.Client(t, redisync.WithRecheckInterval(300*time.Millisecond)), "latch-recheck")
	l.TrySetCount(ctx, 2)
	gets := tg.Calls(t, "get")
	done := make(chan error, 1)
	go func() { done <- l.Await(ctx) }()
	waitSubscribed(t, tg, "redisson_countdownlatch__channel__{latch-recheck}", 1)
	// Only a re-check can see the deletion: wait for the tries before and after subscribing.
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := tg.Calls(t, "get") - gets; n < 2 {
			return fmt.Errorf("waiter made %d tries, want 2", n)
		}
		return nil
	})
	testkit.Do(t, tg.Redis(t), "DEL", "latch-recheck") // no message
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not re-check within its recheck interval")
	}
}

// TestRedissonCompatibility writes the latch as a Java process would, and reads what we write.
func TestRedissonCompatibility(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		l := newLatch(t, tg.Client(t, redisync.WithRecheckInterval(slow)), "latch-java")
		pub := "PUBLISH"
		if tg.Name == "cluster" {
			pub = "SPUBLISH"
		}
		const ch = "redisson_countdownlatch__channel__{latch-java}"

		// Java set the count; we see it and wait; Java counts down to zero and publishes 0.
		testkit.Do(t, rdb, "SET", "latch-java", "1")
		if n, _ := l.Count(ctx); n != 1 {
			t.Fatalf("Count = %d for a latch set by Java to 1", n)
		}
		if ok, _ := l.TrySetCount(ctx, 4); ok {
			t.Fatal("TrySetCount overwrote Java's count")
		}
		done := make(chan error, 1)
		go func() { done <- l.Await(ctx) }()
		waitSubscribed(t, tg, ch, 1)
		testkit.Do(t, rdb, "DEL", "latch-java")
		testkit.Do(t, rdb, pub, ch, "0")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("Java's message did not wake our waiter")
		}

		// We set and count down; the key holds the count as a string, and Java's channel hears 0.
		l.TrySetCount(ctx, 2)
		if v, err := rdb.Do(ctx, rdb.B().Get().Key("latch-java").Build()).ToString(); v != "2" {
			t.Fatalf("key holds %q (%v), want \"2\"", v, err)
		}
		if ms, err := rdb.Do(ctx, rdb.B().Pttl().Key("latch-java").Build()).AsInt64(); ms != -1 {
			t.Fatalf("PTTL %d (%v): Redisson's latch has no expiry", ms, err)
		}
		heard := make(chan string, 4)
		subCtx, stop := context.WithCancel(ctx)
		received := make(chan struct{})
		defer func() { stop(); <-received }()
		sub := rdb.B().Subscribe().Channel(ch).Build()
		if tg.Name == "cluster" {
			sub = rdb.B().Ssubscribe().Channel(ch).Build()
		}
		subscribed := make(chan struct{})
		var once sync.Once
		go func() {
			defer close(received)
			// The hook, not PUBSUB NUMSUB: our waiter's subscription may still linger on ch.
			hook := rueidis.WithOnSubscriptionHook(subCtx, func(rueidis.PubSubSubscription) { once.Do(func() { close(subscribed) }) })
			rdb.Receive(hook, sub, func(m rueidis.PubSubMessage) { heard <- m.Message })
		}()
		<-subscribed
		l.CountDown(ctx)
		l.CountDown(ctx)
		select {
		case m := <-heard:
			if m != "0" {
				t.Fatalf("heard %q on the Redisson channel, want \"0\"", m)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("nothing published on the Redisson channel when the count reached zero")
		}
	})
}

func TestBadInput(t *testing.T) {
	_, c := testkit.Mini(t)
	ctx := context.Background()
	if _, err := New(nil, "x"); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("nil client: %v", err)
	}
	if _, err := New(c, ""); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}
	l := newLatch(t, c, "latch-bad")
	for _, n := range []int64{0, -1} {
		if _, err := l.TrySetCount(ctx, n); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("TrySetCount(%d): %v", n, err)
		}
	}
	if err := l.TryAwait(ctx, -time.Second); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("negative wait: %v", err)
	}
	//lint:ignore SA1012 a nil ctx is the bad input under test
	if err := l.Await(nil); !errors.Is(err, redisync.ErrInvalidArgument) { //nolint:staticcheck
		t.Fatalf("nil ctx: %v", err)
	}
}

func TestServerErrors(t *testing.T) {
	tg := testkit.Standalone(t)
	ctx := context.Background()
	c := tg.Client(t, redisync.WithRecheckInterval(slow))
	rdb := tg.Redis(t)
	testkit.Do(t, rdb, "HSET", "latch-wrongtype", "f", "1")
	defer testkit.Do(t, rdb, "DEL", "latch-wrongtype")
	l := newLatch(t, c, "latch-wrongtype")
	if err := l.Await(ctx); !errors.Is(err, redisync.ErrWrongType) {
		t.Fatalf("Await on a hash: %v, want ErrWrongType", err)
	}
	if _, err := l.Count(ctx); err == nil {
		t.Fatal("Count on a hash: no error")
	}
	if err := l.CountDown(ctx); err == nil {
		t.Fatal("CountDown on a hash: no error")
	}
	if ok, err := l.TrySetCount(ctx, 1); !errors.Is(err, redisync.ErrWrongType) || ok {
		t.Fatalf("TrySetCount on a hash = %v, %v; want ErrWrongType", ok, err)
	}
	// Closing the Client ends a waiter with ErrClosed.
	testkit.Do(t, rdb, "SET", "latch-closed", "1")
	defer testkit.Do(t, rdb, "DEL", "latch-closed")
	own := tg.Client(t)
	closed := newLatch(t, own, "latch-closed")
	done := make(chan error, 1)
	go func() { done <- closed.Await(ctx) }()
	waitSubscribed(t, tg, "redisson_countdownlatch__channel__{latch-closed}", 1)
	own.Close()
	select {
	case err := <-done:
		if !errors.Is(err, redisync.ErrClosed) {
			t.Fatalf("Await after Close: %v, want ErrClosed", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Await did not return when its Client closed")
	}
}

// The channel is Redisson's, "redisson_countdownlatch__channel__{" + name + "}", for every name on a
// standalone server (and under Sentinel, which names the same way); on a cluster only where that is
// in the latch's slot, and in the latch's slot always.
func TestChannelOfEveryName(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		for _, name := range []string{"plain", "{tag}x", "a{b}c", "a}b", "a{", "{}", "{job}:7", "cfg}v2", "cfg{v2"} {
			ch := newLatch(t, c, name).channel
			redisson := "redisson_countdownlatch__channel__{" + name + "}"
			switch {
			case tg.Name != "cluster" && ch != redisson:
				t.Errorf("channel of %q is %q, Redisson's is %q", name, ch, redisson)
			case tg.Name == "cluster" && send.Slot(ch) != send.Slot(name):
				t.Errorf("channel %q of %q is in slot %d, the latch in %d", ch, name, send.Slot(ch), send.Slot(name))
			case tg.Name == "cluster" && send.Slot(redisson) == send.Slot(name) && ch != redisson:
				t.Errorf("channel of %q is %q, Redisson's %q is in the latch's slot", name, ch, redisson)
			}
		}
	})
}
