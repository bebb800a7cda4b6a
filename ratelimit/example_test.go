package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/semaphore"
)

// A worker pool that calls an API allowing 5 calls per 100ms and 2 at once, shared by every process
// that uses the names "api:rate" and "api:slots": here 6 workers on two Clients, as if on two machines.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()

	var running, most, done atomic.Int64
	var wg sync.WaitGroup
	for range 2 { // two machines
		c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		rate, err := ratelimit.New(c, "api:rate")
		if err != nil {
			panic(err)
		}
		slots, err := semaphore.New(c, "api:slots")
		if err != nil {
			panic(err)
		}
		// Whoever comes first sets the rate and the pool's size; the others find them set.
		if _, err := rate.TrySetRate(ctx, ratelimit.Config{Rate: 5, Interval: 100 * time.Millisecond}); err != nil {
			panic(err)
		}
		if _, err := slots.TrySetPermits(ctx, 2); err != nil {
			panic(err)
		}
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					// A slot first, then a permit of the rate: the call starts as soon as the permit is
					// granted, so the calls keep the rate the grants keep.
					err := slots.Do(ctx, 1, func(ctx context.Context) error {
						if err := rate.Acquire(ctx, 1); err != nil {
							return err
						}
						n := running.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(5 * time.Millisecond) // the call
						running.Add(-1)
						done.Add(1)
						return nil
					})
					if err != nil {
						panic(err)
					}
				}
			}()
		}
	}
	wg.Wait()
	fmt.Println("calls made:", done.Load())
	fmt.Println("at most 2 at once:", most.Load() <= 2)
	// Output:
	// calls made: 24
	// at most 2 at once: true
}
