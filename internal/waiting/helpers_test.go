package waiting

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/minitest"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/pubsub"
)

// newMini returns the Waiter of a client on an embedded server.
func newMini(t *testing.T) *Waiter {
	t.Helper()
	_, c := newMiniServer(t)
	return c
}

// newMiniServer is newMini that returns the server too.
func newMiniServer(t *testing.T) (*miniredis.Miniredis, *Waiter) {
	t.Helper()
	m, rdb := minitest.Mini(t)
	s := send.New(rdb, true, "test", 0, 0)
	n := pubsub.New(rdb, false)
	t.Cleanup(func() {
		s.Shut()
		n.Close()
		s.Drain()
	})
	// The stall bound package redisync gives rueidis's defaults.
	return m, New(s, n, &hold.Events{}, 5*time.Second, 12*time.Second)
}
