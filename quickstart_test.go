// This file holds the README's quick start for package redisync, as it stands there.

package redisync_test

import (
	"log"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

// The README's first block: a Client on a server of one's own (compiled, not run: it needs that
// server; every package's Example_quickStart runs its block on an embedded one).
func ExampleNew() {
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}
