package spinlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/spinlock"
)

func Example() {
	srv, _ := miniredis.Run() // an embedded Redis; use your server's address instead
	defer srv.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// Redisson's getSpinLock(name): waiters sleep 1 ms, 2 ms, 4 ms ... up to 128 ms between tries.
	lock, _ := spinlock.New(c, "thumbnail:4711")
	ctx, err := lock.Lock(context.Background())
	if err != nil {
		panic(err)
	}

	// Another owner, with Redisson's ConstantBackOff: a try every 10 ms, for at most 50 ms.
	other, _ := spinlock.New(c, "thumbnail:4711", spinlock.WithBackoff(spinlock.ConstantBackoff{Delay: 10 * time.Millisecond}))
	if _, err := other.TryLock(context.Background(), 50*time.Millisecond); err != nil {
		fmt.Println(err)
	}

	lock.Unlock(ctx)
	held, err := other.TryLock(context.Background(), 50*time.Millisecond)
	fmt.Println("after release:", err)
	other.Unlock(held)
	// Output:
	// spin lock "thumbnail:4711": redisync: not acquired within the wait bound
	// after release: <nil>
}
