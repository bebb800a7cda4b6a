// This file holds the README's quick start for package spinlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package spinlock_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/spinlock"
)

// quickStart is the README's quick start for package spinlock.
func quickStart(ctx context.Context, c *redisync.Client) error {
	lock, err := spinlock.New(c, "thumbnail:4711") // waiters poll: 1 ms, 2 ms, 4 ms ... up to 128 ms
	if err != nil {
		return err
	}
	return lock.Do(ctx, render) // Lock, render, Unlock: also when render panics
}

func render(ctx context.Context) error {
	fmt.Println("rendered under the lock:", ctx.Err() == nil)
	return nil
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output: rendered under the lock: true
}
