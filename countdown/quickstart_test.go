// This file holds the README's quick start for package countdown, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package countdown_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/testkit"
)

// quickStart is the README's quick start for package countdown.
func quickStart(ctx context.Context, c *redisync.Client) error {
	latch, err := countdown.New(c, "shards-ready")
	if err != nil {
		return err
	}
	if _, err := latch.TrySetCount(ctx, 8); err != nil { // the coordinator
		return err
	}
	for range 8 { // each of 8 workers, when done (here one after another)
		if err := latch.CountDown(ctx); err != nil {
			return err
		}
	}
	return latch.Await(ctx) // everyone waiting goes on at zero; TryAwait(ctx, wait) bounds it
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	err := quickStart(context.Background(), c)
	fmt.Println("every shard ready:", err == nil)
	// Output: every shard ready: true
}
