package multilock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// connect returns a Client on s that gives up on a stalled server quickly, and checks at the end of
// the test that it holds, renews and follows nothing.
func connect(t *testing.T, s *redistest.Server, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	return connectStalling(t, s, 300*time.Millisecond, opts...)
}

// connectStalling is connect with a Client whose connections wait stall for an answer (0: rueidis's
// default, 10 s) before they are given up: a test that stalls no server uses it, since on a busy
// machine a live server's answer can take longer than connect's 300 ms to be read.
func connectStalling(t *testing.T, s *redistest.Server, stall time.Duration, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	opts = append([]redisync.Option{redisync.WithWatchdogTimeout(time.Second)}, opts...)
	c, err := redisync.New(rueidis.ClientOption{
		InitAddress:      []string{s.Addr},
		DisableCache:     true,
		ConnWriteTimeout: stall,
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Tries that a stalled server answered late are given back in the background.
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := testkit.Holds(c); n != 0 {
				return fmt.Errorf("client on %s still records %d holds", s.Addr, n)
			}
			return nil
		})
		testkit.CloseClean(t, c)
	})
	return c
}

// locks returns one rlock.Lock per server, named names[i] on servers[i], each on its own Client.
func locks(t *testing.T, servers []*redistest.Server, names []string, opts ...rlock.Option) []Locker {
	t.Helper()
	return locksStalling(t, servers, 300*time.Millisecond, names, opts...)
}

// locksStalling is locks on Clients of connectStalling with stall.
func locksStalling(t *testing.T, servers []*redistest.Server, stall time.Duration, names []string, opts ...rlock.Option) []Locker {
	t.Helper()
	var out []Locker
	for i, s := range servers {
		l, err := rlock.New(connectStalling(t, s, stall), names[i], opts...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func same(name string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = name
	}
	return names
}

// exists reports whether key exists on s.
func exists(t *testing.T, s *redistest.Server, key string) bool {
	t.Helper()
	out, err := s.Do("EXISTS", key)
	if err != nil {
		t.Fatal(err)
	}
	return out == "1"
}

// requireNoKeys fails if any of servers has key.
func requireNoKeys(t *testing.T, servers []*redistest.Server, key string) {
	t.Helper()
	for _, s := range servers {
		if exists(t, s, key) {
			t.Fatalf("key %q left on %s", key, s.Addr)
		}
	}
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startN starts n independent servers for this test, and checks at its end, after every Client is
// closed, that nothing is subscribed on them.
func startN(t *testing.T, n int) []*redistest.Server {
	t.Helper()
	servers := redistest.StartN(t, n)
	tg := &testkit.Target{Name: "independent", Servers: servers}
	t.Cleanup(func() { tg.RequireNoSubscriptions(t) })
	return servers
}
