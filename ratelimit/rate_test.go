package ratelimit_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
)

// TestRate: 3 Clients with 4 goroutines each take 1 or 2 permits at a time, more than the rate
// allows, until 60 permits are granted. By the server times the script returned: no window of the
// interval ever holds more than the rate, and the limiter is not idle while they wait: the grants
// after the first window take close to the least time the rate allows.
func TestRate(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const (
			rate     = 10
			interval = 500 * time.Millisecond
			total    = 60
		)
		var log grantLog
		name := unique("rate")
		var limiters []*ratelimit.Limiter
		for range 3 {
			c, _ := recorded(t, tg, &log)
			l, err := ratelimit.New(c, name)
			if err != nil {
				t.Fatal(err)
			}
			limiters = append(limiters, l)
		}
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		if _, err := limiters[0].TrySetRate(ctx, overall(rate, interval)); err != nil {
			t.Fatal(err)
		}
		var granted atomic.Int64
		var wg sync.WaitGroup
		for i := range 12 {
			l := limiters[i%3]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n := int64(1 + rand.IntN(2))
					var err error
					if i%2 == 0 {
						err = l.Acquire(ctx, n)
					} else {
						err = l.TryAcquire(ctx, n, time.Minute)
					}
					if errors.Is(err, context.Canceled) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					if granted.Add(n) >= total {
						stop() // the waiters still waiting give up
					}
				}
			}()
		}
		wg.Wait()
		grants := log.sorted()
		var sum int64
		for _, g := range grants {
			sum += g.permits
		}
		// A try that was answered as its waiter gave up is recorded, and given back.
		if sum < granted.Load() {
			t.Fatalf("recorded %d permits, granted %d", sum, granted.Load())
		}
		// No window [t, t+interval) holds more than rate: a grant leaves the window at t+interval.
		ms := interval.Milliseconds()
		j, inWindow := 0, int64(0)
		for i, g := range grants {
			inWindow += g.permits
			for grants[j].at <= g.at-ms {
				inWindow -= grants[j].permits
				j++
			}
			if inWindow > rate {
				t.Fatalf("%d permits within %v ending at grant %d (%+v)", inWindow, interval, i, grants[j:i+1])
			}
		}
		// The permits after the first rate need (sum-rate)/rate windows at least; waiting callers must
		// not leave the limiter idle for long: they take them in close to that time.
		first, last := grants[0].at, grants[len(grants)-1].at
		least := float64((sum-1)/rate) * float64(ms)
		use := least / float64(last-first)
		t.Logf("%s: %d permits in %d grants over %d ms; the rate allows it in %.0f ms: %.0f%% busy",
			tg.Name, sum, len(grants), last-first, least, use*100)
		if use < 0.7 || use > 1 {
			t.Errorf("the limiter was busy %.0f%% of the time its callers waited, want close to 100%%", use*100)
		}
		if _, err := limiters[0].Delete(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
