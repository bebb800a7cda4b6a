package fairlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// A lease for one acquisition (Redisson's lock(10, SECONDS)), extended by its holder when the work
// runs longer (Redisson's expire on a held lock).
func ExampleLock_Extend() {
	c, stop := testkit.QuickClient()
	defer stop()
	lock, _ := fairlock.New(c, "nightly-report")
	held, err := lock.LockFor(context.Background(), 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer lock.Unlock(held)
	if err := lock.Extend(held, time.Hour); err != nil {
		panic(err)
	}
	deadline, _ := held.Deadline()
	fmt.Println("ends in more than 10s:", time.Until(deadline) > 10*time.Second)
	// Output: ends in more than 10s: true
}
