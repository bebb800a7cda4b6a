package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// Redisson's RSemaphore scripts (RedissonSemaphore.tryAcquireAsync0 and releaseAsync).
const (
	javaTryAcquire = "local value = redis.call('get', KEYS[1]); " +
		"if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then " +
		"local val = redis.call('decrby', KEYS[1], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return 0;"
	javaRelease = "local value = redis.call('incrby', KEYS[1], ARGV[1]); " +
		"redis.call(ARGV[2], KEYS[2], value); "
)

// javaAcquire is the rest of Redisson's RSemaphore.acquire(n) on the semaphore whose key is key, once
// its try after subscribing to sub has failed: a try after each message on the channel. Redisson
// waits for ever; this fails the test after 10 s.
func javaAcquire(t *testing.T, j *testkit.Java, sub *testkit.Subscription, key string, n int64) {
	t.Helper()
	sub.Until(10*time.Second, "Java acquire", func() bool {
		return j.EvalInt(javaTryAcquire, []string{key}, strconv.FormatInt(n, 10)) == 1
	})
}

// A release that hands permits to a Go waiter and leaves some announces what is left to a Java
// waiter, also when a Go client that no longer listens is still recorded among the semaphore's clients
// (it stays so for the wait window after its waiter left).
func TestJavaWaiterHearsWhatIsLeftBesideStaleClients(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("java-stale")
		testkit.Do(t, rdb, "SET", name, "0")

		// A Go client whose waiter gave up: recorded for the wait window (two minutes with slow), and
		// soon listening on nothing.
		gone := newSemaphore(t, tg.Client(t, slow), name)
		leave, cancel := context.WithCancel(ctx)
		left := acquireIn(gone, leave, 1)
		oneRecord(t, tg, name)
		cancel()
		if err := <-left; !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire of a waiter that gave up: %v", err)
		}
		clients := "redisync_semaphore_clients:{" + name + "}"
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := tg.Subscribers(t, channelOf(name)); n != 0 {
				return fmt.Errorf("%d subscribers on the semaphore's channel", n)
			}
			if r := records(t, tg, name); len(r) != 0 {
				return fmt.Errorf("waiter records %q left", r)
			}
			return nil
		})
		if n := testkit.DoString(t, rdb, "ZCARD", clients); n != "1" {
			t.Fatalf("%s clients recorded, want the one that left", n)
		}

		// A Go waiter and a Java waiter; a release of 2 serves the Go waiter and leaves 1.
		ours := acquireIn(newSemaphore(t, tg.Client(t, slow), name), ctx, 1)
		oneRecord(t, tg, name)
		if n := testkit.DoString(t, rdb, "ZCARD", clients); n != "2" {
			t.Fatalf("%s clients recorded, want the one that left and ours", n)
		}
		j := tg.Java(t)
		sub := j.Subscribe(channelOf(name))
		if j.EvalInt(javaTryAcquire, []string{name}, "1") == 1 {
			t.Fatal("Java acquired from an empty semaphore")
		}
		if err := newSemaphore(t, tg.Client(t), name).Release(ctx, 2); err != nil {
			t.Fatal(err)
		}
		await(t, ours, "our waiter")
		javaAcquire(t, j, sub, name, 1)
		if v := get(t, rdb, name); v != "0" {
			t.Fatalf("count %q after both acquired, want 0", v)
		}
	})
}
