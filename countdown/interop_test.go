package countdown

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

// Redisson's RCountDownLatch.countDownAsync script.
const javaCountDown = "local v = redis.call('decr', KEYS[1]);" +
	"if v <= 0 then redis.call('del', KEYS[1]) end;" +
	"if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;"

// A hash-tagged name and names with braces of their own: a Java await() (subscribed to Redisson's
// channel, reading the count after each message) returns on a Go CountDown, and a Go Await on a Java
// countDown(). On a cluster only names whose Redisson channel is in the latch's slot can be shared.
func TestRedissonChannelOfNamesWithBraces(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		c := tg.Client(t, redisync.WithRecheckInterval(slow))
		for i, base := range []string{"{job}:7", "cfg}v2", "cfg{v2", "a{}b"} {
			name := fmt.Sprintf("%s-interop-%d", base, i)
			ch := "redisson_countdownlatch__channel__{" + name + "}"
			if tg.Name == "cluster" && send.Slot(ch) != send.Slot(name) {
				continue // Redisson's scripts fail there (CROSSSLOT): no Java process can share it
			}
			t.Run(base, func(t *testing.T) {
				l := newLatch(t, c, name)
				j := tg.Java(t)

				// Go counts down, Java awaits.
				if ok, err := l.TrySetCount(ctx, 1); !ok || err != nil {
					t.Fatalf("TrySetCount: %v, %v", ok, err)
				}
				sub := j.Subscribe(ch)
				if testkit.DoString(t, rdb, "GET", name) != "1" {
					t.Fatal("the Java waiter does not see the count")
				}
				if err := l.CountDown(ctx); err != nil {
					t.Fatal(err)
				}
				sub.Until(10*time.Second, "Java await", func() bool {
					return j.EvalInt("return redis.call('exists', KEYS[1])", []string{name}) == 0
				})

				// Java counts down, Go awaits: only Redisson's message can wake it within the test.
				testkit.Do(t, rdb, "SET", name, "1")
				done := make(chan error, 1)
				go func() { done <- l.Await(ctx) }()
				testkit.Eventually(t, 5*time.Second, func() error {
					if n := core.Of(c).Notifier().Waiting(ch); n != 1 {
						return fmt.Errorf("%d waiters", n)
					}
					return nil
				})
				waitSubscribed(t, tg, ch, 2) // the Java process's and ours
				j.Eval(javaCountDown, []string{name, ch}, "0", j.PublishCommand())
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a Java countDown() did not wake Await")
				}
			})
		}
	})
}
