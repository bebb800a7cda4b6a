// This file holds the README's quick start for package semaphore, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package semaphore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// quickStart is the README's quick start for package semaphore.
func quickStart(ctx context.Context, c *redisync.Client) error {
	sem, err := semaphore.New(c, "transcoders")
	if err != nil {
		return err
	}
	if _, err := sem.TrySetPermits(ctx, 3); err != nil { // only if it was never set
		return err
	}
	return sem.Do(ctx, 1, transcode) // at most 3 at once, across every process
}

func transcode(context.Context) error {
	fmt.Println("transcoded holding a permit")
	return nil
}

// quickStartExpirable is the README's quick start for the permit-expirable semaphore.
func quickStartExpirable(ctx context.Context, c *redisync.Client) error {
	sem, err := semaphore.NewExpirable(c, "api-quota", semaphore.WithLease(time.Minute))
	if err != nil {
		return err
	}
	if _, err := sem.TrySetPermits(ctx, 10); err != nil {
		return err
	}
	return sem.Do(ctx, 1, transcode) // a process that dies holding it gives it back after a minute
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	ctx := context.Background()
	if err := quickStart(ctx, c); err != nil {
		panic(err)
	}
	if err := quickStartExpirable(ctx, c); err != nil {
		panic(err)
	}
	quota, _ := semaphore.NewExpirable(c, "api-quota")
	n, _ := quota.Available(ctx)
	fmt.Println("api-quota permits back in the pool:", n)
	// Output:
	// transcoded holding a permit
	// transcoded holding a permit
	// api-quota permits back in the pool: 10
}
