package rwlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

// Redisson's readLock().tryLock(100, 10, SECONDS): a read hold of at most 10 s, waited for at most
// 100 ms.
func ExampleLock_TryLockFor() {
	c, stop := testkit.QuickClient()
	defer stop()
	rw, _ := rwlock.New(c, "schema")
	read, err := rw.ReadLock().TryLockFor(context.Background(), 100*time.Millisecond, 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer rw.ReadLock().Unlock(read)
	deadline, _ := read.Deadline()
	fmt.Println("ends within 10s:", time.Until(deadline) <= 10*time.Second)
	// Output: ends within 10s: true
}
