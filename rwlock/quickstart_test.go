// This file holds the README's quick start for package rwlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package rwlock_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

// quickStart is the README's quick start for package rwlock.
func quickStart(ctx context.Context, c *redisync.Client) error {
	rw, err := rwlock.New(c, "schema")
	if err != nil {
		return err
	}
	if err := rw.ReadLock().Do(ctx, check); err != nil { // many readers at once
		return err
	}
	return rw.WriteLock().Do(ctx, migrate) // one writer, and no reader beside it
}

func check(ctx context.Context) error {
	fmt.Println("checked under the read lock:", ctx.Err() == nil)
	return nil
}

func migrate(ctx context.Context) error {
	fmt.Println("migrated under the write lock:", ctx.Err() == nil)
	return nil
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output:
	// checked under the read lock: true
	// migrated under the write lock: true
}
