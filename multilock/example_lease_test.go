package multilock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// Redisson's multiLock.lock(10, SECONDS): every sub-lock with a lease of 10 s, whatever its own.
func ExampleMultiLock_LockFor() {
	east, stopEast := connect()
	defer stopEast()
	west, stopWest := connect()
	defer stopWest()
	from, _ := rlock.New(east, "account:17")
	to, _ := rlock.New(west, "account:42")
	both, _ := multilock.New(from, to)
	held, err := both.LockFor(context.Background(), 10*time.Second)
	if err != nil {
		panic(err)
	}
	deadline, _ := held.Deadline()
	fmt.Println("ends within 10s:", time.Until(deadline) <= 10*time.Second)
	locked, _ := both.IsLocked(context.Background())
	fmt.Println("locked:", locked)
	both.Unlock(held)
	// Output:
	// ends within 10s: true
	// locked: true
}

// An operator frees a MultiLock whoever holds it: its holders' ctxs end with redisync.ErrLost.
func ExampleMultiLock_ForceUnlock() {
	east, stopEast := connect()
	defer stopEast()
	west, stopWest := connect()
	defer stopWest()
	from, _ := rlock.New(east, "account:17")
	to, _ := rlock.New(west, "account:42")
	both, _ := multilock.New(from, to)
	held, _ := both.Lock(context.Background())
	freed, err := both.ForceUnlock(context.Background())
	fmt.Println(freed, err)
	<-held.Done()
	fmt.Println(context.Cause(held) != nil)
	// Output:
	// true <nil>
	// true
}

// A RedLock with options of its own: the locks first, one by one, the options after.
func ExampleRedLock_With() {
	var locks []multilock.Locker
	for range 3 {
		c, stop := connect()
		defer stop()
		l, _ := rlock.New(c, "nightly-report")
		locks = append(locks, l)
	}
	red, err := multilock.NewRedLock(locks...)
	if err != nil {
		panic(err)
	}
	red, err = red.With(multilock.WithInstanceTimeout(20*time.Millisecond), multilock.WithRetryDelay(50*time.Millisecond))
	if err != nil {
		panic(err)
	}
	err = red.Do(context.Background(), func(ctx context.Context) error { return nil })
	fmt.Println(err)
	// Output: <nil>
}

// A Group's holder extends every value of its hold at once.
func ExampleGroup_Extend() {
	c, stop := connect()
	defer stop()
	g, _ := multilock.NewGroup(c, "shop:7:orders", []string{"1001", "1002"})
	held, _ := g.LockFor(context.Background(), 10*time.Second)
	defer g.Unlock(held)
	fmt.Println(g.Extend(held, time.Hour))
	// Output: <nil>
}
