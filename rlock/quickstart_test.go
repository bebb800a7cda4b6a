// This file holds the README's quick start for package rlock, as it stands there: quickStart's body
// is the README's block, and Example_quickStart runs it.

package rlock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
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
	c, stop := quickClient()
	defer stop()
	if err := quickStart(context.Background(), c); err != nil {
		panic(err)
	}
	// Output: sold under the lock: true
}
