package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// connect starts an embedded server and returns a Client on it, and a func that stops both.
var connect = testkit.QuickClient

// A transfer between two accounts kept on different servers holds both accounts' locks, or none.
func Example() {
	east, stopEast := connect()
	defer stopEast()
	west, stopWest := connect()
	defer stopWest()

	from, _ := rlock.New(east, "account:17")
	to, _ := rlock.New(west, "account:42")
	both, err := multilock.New(from, to)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	held, err := both.Lock(ctx)
	if err != nil {
		panic(err)
	}
	// Another transfer between the same accounts, even with them in the other order, waits.
	other, _ := multilock.New(to, from)
	_, err = other.TryLock(ctx, 0)
	fmt.Println("other transfer:", errors.Is(err, redisync.ErrNotAcquired))

	// ... move the money, with held as the ctx: it ends if either lock is lost ...
	ok, err := both.IsHeld(held)
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", ok)
	if err := both.Unlock(held); err != nil {
		panic(err)
	}
	fmt.Println("released:", errors.Is(context.Cause(held), redisync.ErrReleased))
	// Output:
	// other transfer: true
	// held: true
	// released: true
}

// A RedLock over three independent servers holds when two of them grant the lock. The hold's ctx
// ends when the validity time does.
func ExampleRedLock() {
	var locks []multilock.Locker
	for range 3 {
		c, stop := connect()
		defer stop()
		l, err := rlock.New(c, "nightly-report", rlock.WithLease(10*time.Second))
		if err != nil {
			panic(err)
		}
		locks = append(locks, l)
	}
	red, err := multilock.NewRedLock(locks...)
	if err != nil {
		panic(err)
	}

	held, err := red.TryLock(context.Background(), time.Second)
	if err != nil {
		panic(err)
	}
	validUntil, _ := held.Deadline()
	fmt.Println("quorum:", red.Quorum())
	fmt.Println("valid for less than the lease:", time.Until(validUntil) < 10*time.Second)
	if err := red.Unlock(held); err != nil {
		panic(err)
	}
	// Output:
	// quorum: 2
	// valid for less than the lease: true
}

// An order batch locks all of its order ids at once, in one command: a batch that shares an order
// waits, one with other orders of the same shop does not.
func ExampleGroup() {
	c, stop := connect()
	defer stop()
	ctx := context.Background()

	batch, err := multilock.NewGroup(c, "shop:7:orders", []string{"1001", "1002", "1003"})
	if err != nil {
		panic(err)
	}
	held, err := batch.Lock(ctx)
	if err != nil {
		panic(err)
	}

	overlapping, _ := multilock.NewGroup(c, "shop:7:orders", []string{"1003", "1004"})
	_, err = overlapping.TryLock(ctx, 0)
	fmt.Println("a batch with order 1003:", errors.Is(err, redisync.ErrNotAcquired))

	other, _ := multilock.NewGroup(c, "shop:7:orders", []string{"1005"})
	err = other.Do(ctx, func(ctx context.Context) error { return nil })
	fmt.Println("a batch with other orders:", err == nil)

	// ... ship the orders, with held as the ctx: it ends if the hold is lost ...
	if err := batch.Unlock(held); err != nil {
		panic(err)
	}
	fmt.Println("released:", errors.Is(context.Cause(held), redisync.ErrReleased))
	// Output:
	// a batch with order 1003: true
	// a batch with other orders: true
	// released: true
}
