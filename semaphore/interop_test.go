package semaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// oddNames are names whose side keys and channels Redisson builds without the usual braces (they hold
// a '{'), or with braces that do not make the name's tag (a '}'), and a hash-tagged name.
var oddNames = []string{"cfg}v2", "cfg{v2", "{job}:7", "a{}b"}

// redissonChannel is Redisson's channel of a semaphore (RedissonObject.prefixName("redisson_sc", N)).
func redissonChannel(name string) string {
	for _, r := range name {
		if r == '{' {
			return "redisson_sc:" + name
		}
	}
	return "redisson_sc:{" + name + "}"
}

// Names with braces of their own: a Java waiter hears a Go release, and a Go waiter a Java release,
// on Redisson's channel; the permit-expirable semaphore keeps its permits in Redisson's timeout key.
// On a cluster only the names whose Redisson names keep the name's slot can be shared.
func TestRedissonNamesWithBraces(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		c := tg.Client(t, slow)
		for _, base := range oddNames {
			name := base + unique("-")
			ch := redissonChannel(name)
			if tg.Name == "cluster" && base != "{job}:7" {
				continue // Redisson's names leave the slot: Redisson itself fails there (CROSSSLOT)
			}
			t.Run(base, func(t *testing.T) {
				s := newSemaphore(t, c, name)
				j := tg.Java(t)
				testkit.Do(t, rdb, "SET", name, "0")

				// Go releases, Java acquires.
				sub := j.Subscribe(ch)
				if j.EvalInt(javaTryAcquire, []string{name}, "1") == 1 {
					t.Fatal("Java acquired from an empty semaphore")
				}
				if err := s.Release(ctx, 1); err != nil {
					t.Fatal(err)
				}
				javaAcquire(t, j, sub, name, 1)

				// Java releases, Go acquires: only Redisson's message can wake it within the test.
				done := acquireIn(s, ctx, 1)
				testkit.Eventually(t, 5*time.Second, func() error {
					if waiting(c, name) != 1 {
						return fmt.Errorf("no waiter")
					}
					return nil
				})
				j.Eval(javaRelease, []string{name, ch}, "1", j.PublishCommand())
				await(t, done, "Go waiter after a Java release")

				// The permit-expirable semaphore: Redisson's timeout key holds the Go permit.
				e, err := semaphore.NewExpirable(c, name+"x")
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := e.TrySetPermits(ctx, 1); !ok || err != nil {
					t.Fatalf("TrySetPermits: %v, %v", ok, err)
				}
				ids, err := e.TryAcquire(ctx, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				timeout := "{" + name + "x}:timeout"
				if redissonChannel(name) == "redisson_sc:"+name {
					timeout = name + "x:timeout"
				}
				if n := testkit.DoString(t, rdb, "ZCARD", timeout); n != "1" {
					t.Fatalf("Redisson's timeout key %q holds %s permits, want 1", timeout, n)
				}
				if err := e.Release(ctx, ids...); err != nil {
					t.Fatal(err)
				}
				testkit.Do(t, rdb, "DEL", name, name+"x", timeout)
			})
		}
	})
}
