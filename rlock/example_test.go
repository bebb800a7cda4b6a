package rlock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

func Example() {
	srv, _ := miniredis.Run() // an embedded Redis; use your server's address instead
	defer srv.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	lock, _ := rlock.New(c, "stock:sku-42")
	ctx, err := lock.Lock(context.Background()) // ctx now carries the owner
	if err != nil {
		panic(err)
	}
	inner, _ := lock.Lock(ctx) // re-entry: same owner, count 2
	n, _ := lock.HoldCount(inner)
	fmt.Println("hold count:", n)
	lock.Unlock(inner)
	lock.Unlock(ctx)
	fmt.Println("after release:", context.Cause(ctx))
	// Output:
	// hold count: 2
	// after release: redisync: released
}

func ExampleLock_TryLock() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	c, _ := redisync.New(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true})
	defer c.Close()

	lock, _ := rlock.New(c, "nightly-report")
	held, _ := lock.Lock(context.Background())
	// Another owner tries once, without waiting.
	if _, err := lock.TryLock(context.Background(), 0); err != nil {
		fmt.Println(err)
	}
	lock.Unlock(held)
	// Output:
	// lock "nightly-report": redisync: not acquired within the wait bound
}
