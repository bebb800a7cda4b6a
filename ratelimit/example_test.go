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

// A job that takes permits for a batch of 10 calls and makes only 4 gives the other 6 back, for the
// next job to use within the same interval.
func ExampleLimiter_Release() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	rl, err := ratelimit.New(c, "api:rate")
	if err != nil {
		panic(err)
	}
	if _, err := rl.TrySetRate(ctx, ratelimit.Config{Rate: 10, Interval: time.Minute}); err != nil {
		panic(err)
	}
	if err := rl.Acquire(ctx, 10); err != nil {
		panic(err)
	}
	made := 4 // the batch ran out of work early
	if err := rl.Release(ctx, int64(10-made)); err != nil {
		panic(err)
	}
	n, err := rl.Available(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("permits left:", n)
	// Output:
	// permits left: 6
}

// The API's provider raised the quota: every process gets the new rate at once, and the calls
// already made in the window still count against it.
func ExampleLimiter_UpdateRate() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	rl, err := ratelimit.New(c, "api:rate")
	if err != nil {
		panic(err)
	}
	if _, err := rl.TrySetRate(ctx, ratelimit.Config{Rate: 10, Interval: time.Minute}); err != nil {
		panic(err)
	}
	if err := rl.Acquire(ctx, 8); err != nil {
		panic(err)
	}
	for _, rate := range []int64{20, 5} {
		ok, err := rl.UpdateRate(ctx, ratelimit.Config{Rate: rate, Interval: time.Minute}, ratelimit.KeepState())
		if err != nil {
			panic(err)
		}
		n, err := rl.Available(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("rate %d (updated %v): %d permits left\n", rate, ok, n)
	}
	// Output:
	// rate 20 (updated true): 12 permits left
	// rate 5 (updated true): 0 permits left
}

// A limiter for one campaign ends with it: Expire gives every key of the limiter the campaign's end,
// TTL reads it, and ClearExpire keeps the limiter after all.
func ExampleLimiter_Expire() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	rl, err := ratelimit.New(c, "campaign:rate")
	if err != nil {
		panic(err)
	}
	if _, err := rl.TrySetRate(ctx, ratelimit.Config{Rate: 100, Interval: time.Second}); err != nil {
		panic(err)
	}
	if err := rl.Acquire(ctx, 1); err != nil {
		panic(err)
	}
	if _, err := rl.Expire(ctx, 48*time.Hour); err != nil {
		panic(err)
	}
	ttl, err := rl.TTL(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("ends in:", ttl.Round(time.Hour))
	cleared, err := rl.ClearExpire(ctx)
	if err != nil {
		panic(err)
	}
	if ttl, err = rl.TTL(ctx); err != nil {
		panic(err)
	}
	fmt.Printf("expiry cleared: %v, no expiry now: %v\n", cleared, ttl == -1)
	// Output:
	// ends in: 48h0m0s
	// expiry cleared: true, no expiry now: true
}
