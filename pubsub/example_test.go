package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// A primitive of one's own, on the public API only: a flash-sale stock counter that never oversells.
// A buyer's script takes an item only while the stock lasts; a restock adds items and publishes the
// new stock on the item's channel, where buyers that found it empty wait.
var (
	buyScript = lua.New("buy", `
local left = tonumber(redis.call('get', KEYS[1]) or '0')
if left < tonumber(ARGV[1]) then return 0 end
redis.call('decrby', KEYS[1], ARGV[1])
return 1`)
	restockScript = lua.New("restock", `
local left = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], left)
return left`)
)

// Stock is one item's stock.
type Stock struct {
	c              *redisync.Client
	key, restocked string
}

// Buy takes one item, waiting for a restock while there is none, until ctx ends.
func (s *Stock) Buy(ctx context.Context) error {
	// Listen before the first try: a restock between a failed try and the wait is not missed.
	w, err := s.c.Notifier().Subscribe(s.restocked, 1, pubsub.WakeAll)
	if err != nil {
		return err
	}
	defer w.Close()
	select {
	case <-w.Ready():
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	for {
		bought, err := buyScript.Exec(ctx, s.c.Redis(), []string{s.key}, []string{"1"}).AsBool()
		if err != nil || bought {
			return err
		}
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
}

// Restock adds n items and wakes the buyers.
func (s *Stock) Restock(ctx context.Context, n int) error {
	return restockScript.Exec(ctx, s.c.Redis(), []string{s.key, s.restocked}, []string{fmt.Sprint(n)}).Error()
}

func Example() {
	srv, _ := miniredis.Run() // an embedded Redis; use your server's address instead
	defer srv.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	stock := &Stock{c: c, key: "stock:{sku-42}", restocked: "restocked:{sku-42}"}

	// Three buyers come before there is anything to sell; two restocks of one and two items follow.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := stock.Buy(ctx); err != nil {
				fmt.Println(err)
			}
		})
	}
	stock.Restock(ctx, 1)
	stock.Restock(ctx, 2)
	wg.Wait()
	left, _ := c.Redis().Do(ctx, c.Redis().B().Get().Key(stock.key).Build()).AsInt64()
	fmt.Println("three buyers served; stock left:", left)

	// A fourth buyer waits for a restock that does not come, and gives up.
	soon, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = stock.Buy(soon)
	fmt.Println("the fourth buyer:", errors.Is(err, context.DeadlineExceeded))
	// Output:
	// three buyers served; stock left: 0
	// the fourth buyer: true
}
