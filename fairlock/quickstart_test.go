// This file holds the README's quick start for package fairlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package fairlock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
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
	c, stop := quickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output: shipped under the lock: true
}
