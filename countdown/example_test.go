package countdown_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
)

// Three workers report to a coordinator that waits for all of them. Each could run in another
// process, with its own Client on the same Redis.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx := context.Background()
	done, err := countdown.New(c, "batch:42:done")
	if err != nil {
		panic(err)
	}
	if ok, err := done.TrySetCount(ctx, 3); err != nil || !ok {
		panic(fmt.Sprint("latch already set: ", err))
	}
	for range 3 {
		go func() {
			// ... the worker's part of the batch ...
			if err := done.CountDown(ctx); err != nil {
				panic(err)
			}
		}()
	}
	if err := done.Await(ctx); err != nil {
		panic(err)
	}
	n, _ := done.Count(ctx)
	fmt.Println("all workers done; count", n)
	// Output: all workers done; count 0
}
