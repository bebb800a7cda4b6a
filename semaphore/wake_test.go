package semaphore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// scriptCalls sums the EVAL and EVALSHA calls of every node: each is one try or one release.
func scriptCalls(t *testing.T, tg *testkit.Target) int64 {
	t.Helper()
	var total int64
	for _, s := range tg.Servers {
		out, err := s.Do("INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
					n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
					total += n
				}
			}
		}
	}
	return total
}

// A release wakes as many waiters as its permits serve, on their own clients, not one waiter in
// every client that waits: with one permit and 8 clients contending, an acquisition costs about one
// failed try, one successful try and one release. Waking every client (Redisson's way) costs about 9.
func TestSemaphoreNoHerd(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		name := unique("{no-herd}")
		ctx := context.Background()
		if ok, err := newSemaphore(t, tg.Client(t), name).TrySetPermits(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetPermits: %v %v", ok, err)
		}
		var sec testkit.Section
		run := func(n int) {
			var wg sync.WaitGroup
			for range 8 {
				s := newSemaphore(t, tg.Client(t), name)
				wg.Go(func() {
					for range n {
						err := s.Do(ctx, 1, func(context.Context) error {
							sec.Enter()
							time.Sleep(200 * time.Microsecond)
							sec.Leave()
							return nil
						})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
		run(5) // warm up: scripts loaded, channels subscribed
		before := scriptCalls(t, tg)
		run(40)
		calls := float64(scriptCalls(t, tg)-before) / (8 * 40)
		t.Logf("%.2f script calls per acquisition", calls)
		if calls > 4.5 {
			t.Fatalf("%.2f script calls per acquisition with 8 waiting clients: a release wakes more than it serves", calls)
		}
		if sec.Max() != 1 {
			t.Fatalf("%d holders of 1 permit at once", sec.Max())
		}
	})
}
