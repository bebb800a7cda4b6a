package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// slow: no re-check within a test, so that only a message moves a waiter.
var slow = redisync.WithRecheckInterval(time.Minute)

func waitersKey(name string) string { return "redisync_semaphore_waiters:{" + name + "}" }
func grantsKey(name string) string  { return "redisync_semaphore_grants:{" + name + "}" }

// records returns the members of the semaphore's waiter records, oldest try first.
func records(t *testing.T, tg *testkit.Target, name string) []string {
	t.Helper()
	return strings.Fields(strings.Trim(testkit.DoString(t, tg.Redis(t), "ZRANGE", waitersKey(name), "0", "-1"), "[]"))
}

// oneRecord waits until the semaphore has a single waiter record, and returns it with its score.
func oneRecord(t *testing.T, tg *testkit.Target, name string) (member, score string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() error {
		if r := records(t, tg, name); len(r) != 1 {
			return fmt.Errorf("%d waiter records", len(r))
		}
		return nil
	})
	member = records(t, tg, name)[0]
	return member, testkit.DoString(t, tg.Redis(t), "ZSCORE", waitersKey(name), member)
}

// acquireIn runs Acquire(ctx, n) in the background.
func acquireIn(s *semaphore.Semaphore, ctx context.Context, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, n) }()
	return done
}

func await(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not acquired within 5s", what)
	}
}

// handOver does what a release that takes permits for member writes, without its message, and sets
// the count to what is left.
func handOver(t *testing.T, tg *testkit.Target, name, member, score, left string) {
	t.Helper()
	testkit.Do(t, tg.Redis(t), "EVAL", `redis.call('zrem', KEYS[1], ARGV[1])
redis.call('hset', KEYS[2], ARGV[1], ARGV[2])
redis.call('set', KEYS[3], ARGV[3])`, "3", waitersKey(name), grantsKey(name), name, member, score, left)
}

// A release takes the permits for the waiter and tells its Client: the waiter returns without a try
// of its own, and its Client deletes the grant.
func TestReleaseHandsOver(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("hand")
		warm := newSemaphore(t, tg.Client(t), "{"+name+"}warm-up") // scripts loaded on the node: one EVALSHA each
		if err := warm.Release(ctx, 1); err != nil {
			t.Fatal(err)
		}
		releaser := newSemaphore(t, tg.Client(t), name)
		waiter := newSemaphore(t, tg.Client(t, slow), name)
		done := acquireIn(waiter, ctx, 2)
		oneRecord(t, tg, name)
		before := tg.Calls(t, "evalsha", "eval")
		if err := releaser.Release(ctx, 3); err != nil {
			t.Fatal(err)
		}
		await(t, done, "waiter")
		if calls := tg.Calls(t, "evalsha", "eval") - before; calls != 1 {
			t.Fatalf("%d scripts between the release and the waiter's return, want the release alone", calls)
		}
		if v := get(t, rdb, name); v != "1" {
			t.Fatalf("count %q after a release of 3 handed 2 over, want 1", v)
		}
		testkit.Eventually(t, 5*time.Second, func() error {
			if exists(t, rdb, grantsKey(name)) || exists(t, rdb, waitersKey(name)) {
				return errors.New("grants or waiter records left behind")
			}
			return nil
		})
	})
}

// A waiter that misses the hand-over message takes the grant with its next try, once: the count is
// not taken from a second time.
func TestHandOverTakenByTry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("missed")
		testkit.Do(t, rdb, "SET", name, "0")
		waiter := newSemaphore(t, tg.Client(t, redisync.WithRecheckInterval(200*time.Millisecond)), name)
		done := acquireIn(waiter, ctx, 1)
		member, score := oneRecord(t, tg, name)
		handOver(t, tg, name, member, score, "1") // and a permit that a try must not take on top of it
		await(t, done, "waiter")
		if v := get(t, rdb, name); v != "1" {
			t.Fatalf("count %q: the waiter took a permit besides its grant", v)
		}
		if exists(t, rdb, grantsKey(name)) {
			t.Fatal("the grant is left behind")
		}
	})
}

// A hand-over message that comes after a later try of the waiter is stale: that try found no grant,
// so the permits it names were given back or taken, however late the server delivered the message.
// The waiter must not take it; a hand-over after its last try it takes.
func TestStaleHandOverIgnored(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("stale")
		testkit.Do(t, rdb, "SET", name, "0")
		c := tg.Client(t, slow)
		waiter := newSemaphore(t, c, name)
		done := acquireIn(waiter, ctx, 1)
		member, granted := oneRecord(t, tg, name) // a grant made now would carry this score
		pub := "PUBLISH"
		if tg.Name == "cluster" {
			pub = "SPUBLISH"
		}
		// The waiter tries again (Redisson's message), and fails.
		publish(t, tg, rdb, name, "1")
		testkit.Eventually(t, 5*time.Second, func() error {
			if _, s := oneRecord(t, tg, name); s == granted {
				return fmt.Errorf("record score still %s: no try since", s)
			}
			return nil
		})
		wake := "redisync_semaphore__wake:{" + name + "}:" + c.ID()
		testkit.Do(t, rdb, pub, wake, "@"+member+" 0 "+granted) // the held-back message
		select {
		case err := <-done:
			t.Fatalf("waiter took a stale hand-over (err %v)", err)
		case <-time.After(300 * time.Millisecond):
		}

		// A hand-over of its current record stands.
		testkit.Do(t, rdb, "EVAL", `local s = redis.call('zscore', KEYS[1], ARGV[1])
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('hset', KEYS[2], ARGV[1], s)
redis.call(ARGV[2], KEYS[3], '@' .. ARGV[1] .. ' 0 ' .. s)`, "3", waitersKey(name), grantsKey(name), wake,
			member, strings.ToLower(pub))
		await(t, done, "waiter")
		if v := get(t, rdb, name); v != "0" {
			t.Fatalf("count %q, want 0", v)
		}
	})
}

// A waiter that gives up after a release took permits for it, before it took the grant, gives them
// back.
func TestGrantGivenBackByLeavingWaiter(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		name := unique("gone")
		testkit.Do(t, rdb, "SET", name, "0")
		waiter := newSemaphore(t, tg.Client(t, slow), name)
		ctx, cancel := context.WithCancel(context.Background())
		done := acquireIn(waiter, ctx, 2)
		member, score := oneRecord(t, tg, name)
		handOver(t, tg, name, member, score, "0") // the permits were taken for it
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("the waiter that gave up: %v, want context.Canceled", err)
		}
		if v := get(t, rdb, name); v != "2" {
			t.Fatalf("count %q after the waiter gave up its grant of 2, want 2", v)
		}
		if exists(t, rdb, grantsKey(name)) || exists(t, rdb, waitersKey(name)) {
			t.Fatal("grants or waiter records left behind")
		}
	})
}

// Permits a release took for a waiter that then gave up go back only into the semaphore they were
// taken from: when it has ended since (a TTL, a deletion by hand), they do not set it anew.
func TestGrantOfAnEndedSemaphoreIsNotGivenBack(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		name := unique("ended")
		testkit.Do(t, rdb, "SET", name, "0")
		waiter := newSemaphore(t, tg.Client(t, slow), name)
		ctx, cancel := context.WithCancel(context.Background())
		done := acquireIn(waiter, ctx, 2)
		member, score := oneRecord(t, tg, name)
		handOver(t, tg, name, member, score, "0") // the permits were taken for it
		testkit.Do(t, rdb, "DEL", name)           // and the semaphore ended
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("the waiter that gave up: %v, want context.Canceled", err)
		}
		if exists(t, rdb, name) {
			t.Fatalf("the grant of an ended semaphore set it anew with %q", get(t, rdb, name))
		}
		if exists(t, rdb, grantsKey(name)) || exists(t, rdb, waitersKey(name)) {
			t.Fatal("grants or waiter records left behind")
		}
	})
}

// A hand-over addressed to a waiter of the Client that is no longer there (its cleanup failed) is
// given back by the Client at once, and the permit goes to the next waiter instead of being lost.
func TestStrayHandOverIsGivenBack(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("stray")
		testkit.Do(t, rdb, "SET", name, "0")
		c := tg.Client(t, slow)
		done := acquireIn(newSemaphore(t, c, name), ctx, 1)
		oneRecord(t, tg, name)
		ghost := c.ID() + ":999999:1" // a record of the same Client, first in line, nobody behind it
		testkit.Do(t, rdb, "ZADD", waitersKey(name), fmt.Sprint(time.Now().Add(time.Minute).UnixMicro()-1_000_000), ghost)
		if r := records(t, tg, name); len(r) != 2 || r[0] != ghost {
			t.Fatalf("records %v: want the ghost first", r)
		}
		if err := newSemaphore(t, tg.Client(t), name).Release(ctx, 1); err != nil {
			t.Fatal(err)
		}
		await(t, done, "the waiter behind the departed one")
		if v := get(t, rdb, name); v != "0" {
			t.Fatalf("count %q, want 0", v)
		}
		testkit.Eventually(t, 5*time.Second, func() error {
			if exists(t, rdb, grantsKey(name)) {
				return errors.New("grants left behind")
			}
			return nil
		})
	})
}

// A Java process waiting on Redisson's channel still hears of what is left of a release once ours
// are served.
func TestJavaWaiterHearsWhatIsLeft(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("java-left")
		testkit.Do(t, rdb, "SET", name, "0")
		done := acquireIn(newSemaphore(t, tg.Client(t, slow), name), ctx, 1)
		oneRecord(t, tg, name)
		got := listen(t, tg, rdb, name) // the Java process
		if err := newSemaphore(t, tg.Client(t), name).Release(ctx, 3); err != nil {
			t.Fatal(err)
		}
		await(t, done, "our waiter")
		testkit.Eventually(t, 5*time.Second, func() error {
			if g := got(); len(g) != 1 || g[0] != "2" {
				return fmt.Errorf("the Java waiter heard %q, want [2]", g)
			}
			return nil
		})
	})
}
