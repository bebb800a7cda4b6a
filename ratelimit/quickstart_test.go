// This file holds the README's quick start for package ratelimit, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
)

// quickStart is the README's quick start for package ratelimit.
func quickStart(ctx context.Context, c *redisync.Client) error {
	rl, err := ratelimit.New(c, "mail-relay")
	if err != nil {
		return err
	}
	// The first process to come sets the rate.
	if _, err := rl.TrySetRate(ctx, ratelimit.Config{Rate: 10000, Interval: time.Hour}); err != nil {
		return err
	}
	return rl.Acquire(ctx, 10) // waits until the sliding window has room
}

func Example_quickStart() {
	c, stop := testkit.QuickClient()
	defer stop()
	ctx := context.Background()
	if err := quickStart(ctx, c); err != nil {
		panic(err)
	}
	rl, _ := ratelimit.New(c, "mail-relay")
	n, _ := rl.Available(ctx)
	fmt.Println("permits left in the window:", n)
	// Output: permits left in the window: 9990
}
