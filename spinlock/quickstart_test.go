// This file holds the README's quick start for package spinlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package spinlock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/spinlock"
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
	c, stop := quickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output: rendered under the lock: true
}
