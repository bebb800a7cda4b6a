package fairlock_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
)

// Two workers line up behind the holder and get the lock in the order they came.
func Example() {
	m, err := miniredis.Run() // any Redis will do; this one is embedded
	if err != nil {
		panic(err)
	}
	defer m.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	lock, err := fairlock.New(c, "release-train")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	held, err := lock.Lock(ctx)
	if err != nil {
		panic(err)
	}

	var wg sync.WaitGroup
	for i, who := range []string{"first", "second"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := lock.Do(ctx, func(ctx context.Context) error {
				fmt.Println(who, "has the lock")
				return nil
			})
			if err != nil {
				fmt.Println(who, err)
			}
		}()
		for n, _ := lock.Waiting(ctx); n != i+1; n, _ = lock.Waiting(ctx) {
			time.Sleep(time.Millisecond) // let it take its place before the next one comes
		}
	}
	n, _ := lock.Waiting(ctx)
	fmt.Println("waiting:", n)

	if err := lock.Unlock(held); err != nil {
		panic(err)
	}
	wg.Wait()
	// Output:
	// waiting: 2
	// first has the lock
	// second has the lock
}
