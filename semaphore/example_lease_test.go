package semaphore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// Redisson's acquire(leaseTime, unit): a permit with a lease of its own, whatever WithLease says.
func ExampleExpirable_AcquireFor() {
	c, stop := testkit.QuickClient()
	defer stop()
	ctx := context.Background()
	sem, _ := semaphore.NewExpirable(c, "api-quota")
	sem.TrySetPermits(ctx, 1)
	ids, err := sem.AcquireFor(ctx, 1, 10*time.Second)
	if err != nil {
		panic(err)
	}
	left, _ := sem.LeaseLeft(ctx, ids[0])
	fmt.Println("returns to the pool within 10s:", left <= 10*time.Second)
	// Redisson's tryAcquire(waitTime, leaseTime, unit), and a bare tryAcquire(): none is left.
	_, err = sem.TryAcquireFor(ctx, 1, 0, 10*time.Second)
	fmt.Println(err)
	sem.Release(ctx, ids...)
	// Output:
	// returns to the pool within 10s: true
	// expirable semaphore "api-quota": redisync: not acquired within the wait bound
}

// Do holds permits while fn runs; with a lease, fn's ctx ends when the lease may have ended.
func ExampleExpirable_Do() {
	c, stop := testkit.QuickClient()
	defer stop()
	ctx := context.Background()
	sem, _ := semaphore.NewExpirable(c, "api-quota", semaphore.WithLease(time.Minute))
	sem.TrySetPermits(ctx, 2)
	err := sem.Do(ctx, 1, func(ctx context.Context) error {
		deadline, _ := ctx.Deadline()
		fmt.Println("ends within the lease:", time.Until(deadline) <= time.Minute)
		return nil
	})
	fmt.Println(err)
	// Output:
	// ends within the lease: true
	// <nil>
}
