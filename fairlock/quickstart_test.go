// This file holds the README's quick start for package fairlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package fairlock_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// quickStart is the README's quick start for package fairlock.
func quickStart(ctx context.Context, c *redisync.Client) error {
	lock, err := fairlock.New(c, "release-train") // granted in arrival order, across every process
	if err != nil {
		return err
	}
	return lock.Do(ctx, ship)
}

func ship(ctx context.Context) error {
	fmt.Println("shipped under the lock:", ctx.Err() == nil)
	return nil
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output: shipped under the lock: true
}
