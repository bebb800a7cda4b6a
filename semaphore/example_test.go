package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// A pool of two workers shared by every process that uses the name "workers".
func Example() {
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

	workers, err := semaphore.New(c, "workers")
	if err != nil {
		panic(err)
	}
	// Whoever comes first sets the size of the pool; the others find it set.
	if _, err := workers.TrySetPermits(ctx, 2); err != nil {
		panic(err)
	}
	err = workers.Do(ctx, 1, func(ctx context.Context) error {
		n, err := workers.Available(ctx)
		fmt.Println("working; permits left:", n)
		return err
	})
	if err != nil {
		panic(err)
	}
	n, err := workers.Available(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("done; permits left:", n)
	// Output:
	// working; permits left: 1
	// done; permits left: 2
}

// Permits with a lease: a worker that dies holding them gives them back when the lease ends.
func ExampleExpirable() {
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

	slots, err := semaphore.NewExpirable(c, "slots", semaphore.WithLease(time.Minute))
	if err != nil {
		panic(err)
	}
	if err := slots.SetPermits(ctx, 3); err != nil {
		panic(err)
	}
	ids, err := slots.Acquire(ctx, 2)
	if err != nil {
		panic(err)
	}
	fmt.Println("permits taken:", len(ids))
	// A long job keeps its permit by renewing the lease.
	if err := slots.UpdateLease(ctx, ids[0], 5*time.Minute); err != nil {
		panic(err)
	}
	available, _ := slots.Available(ctx)
	fmt.Println("available:", available)

	if err := slots.Release(ctx, ids...); err != nil {
		panic(err)
	}
	err = slots.Release(ctx, ids[0])
	fmt.Println("released twice is an error:", errors.Is(err, redisync.ErrNotHeld))
	available, _ = slots.Available(ctx)
	fmt.Println("available:", available)
	// Output:
	// permits taken: 2
	// available: 1
	// released twice is an error: true
	// available: 3
}

// A pool that lives only as long as a batch job: set with a time to live, removed when the batch is
// cancelled, and not set anew by a worker that finishes late.
func ExampleSemaphore_TrySetPermitsTTL() {
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

	pool, err := semaphore.New(c, "batch-42")
	if err != nil {
		panic(err)
	}
	set, err := pool.TrySetPermitsTTL(ctx, 4, time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println("set:", set)
	if err := pool.Acquire(ctx, 1); err != nil {
		panic(err)
	}
	// The batch is cancelled.
	deleted, err := pool.Delete(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted:", deleted)
	// The worker finishes late: its permit goes nowhere.
	released, err := pool.ReleaseIfExists(ctx, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("released:", released)
	// Output:
	// set: true
	// deleted: true
	// released: false
}
