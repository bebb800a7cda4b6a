// This file holds the README's quick start for package ratelimit, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/ratelimit"
)

// quickClient returns a Client on an embedded Redis, and a func that stops both; the README's
// Client is on a server of one's own.
func quickClient() (*redisync.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); m.Close() }
}

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
	c, stop := quickClient()
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
