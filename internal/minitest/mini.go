// Package minitest starts the embedded server (miniredis) that the engine's own unit tests share.
package minitest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// Mini starts an embedded server (miniredis) for a quick unit test of the engine's own packages,
// which cannot use a redisync.Client, and returns it with a rueidis client on it that the caller
// closes; the server stops when t ends.
func Mini(t testing.TB) (*miniredis.Miniredis, rueidis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	return m, rdb
}
