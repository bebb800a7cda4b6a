// This file holds the README's quick start for package rlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package rlock_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// quickStart is the README's quick start for package rlock.
func quickStart(ctx context.Context, c *redisync.Client) error {
	lock, err := rlock.New(c, "stock:sku-42")
	if err != nil {
		return err
	}
	ctx, err = lock.Lock(ctx) // waits; the returned ctx carries the owner
	if err != nil {
		return err
	}
	defer lock.Unlock(ctx)
	return sell(ctx) // ctx ends if the lock is lost; sell may lock again (re-entry)
}

func sell(ctx context.Context) error {
	fmt.Println("sold under the lock:", ctx.Err() == nil)
	return nil
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output: sold under the lock: true
}
