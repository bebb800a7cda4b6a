// This file holds the README's quick start for package multilock, as it stands there: the bodies of
// quickStart and quickStartGroup are the README's blocks, and Example_quickStart runs them.

package multilock_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// quickStart is the README's quick start for MultiLock and RedLock.
func quickStart(ctx context.Context, c1, c2, c3 *redisync.Client) error {
	var locks []multilock.Locker
	for _, c := range []*redisync.Client{c1, c2, c3} { // Clients on different servers
		l, err := rlock.New(c, "orders")
		if err != nil {
			return err
		}
		locks = append(locks, l)
	}
	all, err := multilock.New(locks...) // all or none; NewRedLock(locks...): a majority
	if err != nil {
		return err
	}
	return all.Do(ctx, ship)
}

// quickStartGroup is the README's quick start for Group.
func quickStartGroup(ctx context.Context, c *redisync.Client) error {
	g, err := multilock.NewGroup(c, "shop:7:orders", []string{"1001", "1002", "1003"})
	if err != nil {
		return err
	}
	return g.Do(ctx, ship) // every value or none, in one command
}

func ship(ctx context.Context) error {
	fmt.Println("shipped under the lock:", ctx.Err() == nil)
	return nil
}

func Example_quickStart() {
	c1, stop1 := connect()
	defer stop1()
	c2, stop2 := connect()
	defer stop2()
	c3, stop3 := connect()
	defer stop3()
	ctx := context.Background()
	if err := quickStart(ctx, c1, c2, c3); err != nil {
		panic(err)
	}
	if err := quickStartGroup(ctx, c1); err != nil {
		panic(err)
	}
	// Output:
	// shipped under the lock: true
	// shipped under the lock: true
}
