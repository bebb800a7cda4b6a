// Package testkit is what the tests of every primitive share: real redis-servers (one standalone
// server and one 3-master cluster per test binary, started on first use), clients that check at the
// end of a test that they leave nothing behind, an overlap detector for critical sections, and the
// goroutine leak check.
package testkit

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
)

// Main runs a package's tests, stops the shared servers, and fails if goroutines are left behind.
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	if shared.standalone != nil {
		shared.standalone.Close()
	}
	if shared.cluster != nil {
		shared.cluster.Close()
	}
	shared.mu.Unlock()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Target is a Redis deployment a test runs against.
type Target struct {
	Name    string // "standalone" or "cluster"
	Addrs   []string
	Servers []*redistest.Server // every node, for PUBSUB checks and fault injection
}

var shared struct {
	mu         sync.Mutex
	standalone *redistest.Server
	cluster    *redistest.Cluster
}

// Standalone returns the test binary's shared standalone server.
func Standalone(t testing.TB) *Target {
	redistest.Require(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.standalone == nil {
		s, err := redistest.NewServer(redistest.Config{})
		if err != nil {
			t.Fatal(err)
		}
		shared.standalone = s
	}
	s := shared.standalone
	return &Target{Name: "standalone", Addrs: []string{s.Addr}, Servers: []*redistest.Server{s}}
}

// Cluster returns the test binary's shared 3-master cluster.
func Cluster(t testing.TB) *Target {
	redistest.Require(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil {
		c, err := redistest.NewCluster(3, 0)
		if err != nil {
			t.Fatal(err)
		}
		shared.cluster = c
	}
	return &Target{Name: "cluster", Addrs: shared.cluster.Addrs, Servers: shared.cluster.Servers()}
}

// Own starts a standalone server for this test alone (for tests that stop, pause or flush it).
func Own(t testing.TB, args ...string) *Target {
	s := redistest.Start(t, args...)
	return &Target{Name: "standalone", Addrs: []string{s.Addr}, Servers: []*redistest.Server{s}}
}

// ForEach runs fn against the standalone server and against the cluster, as subtests.
func ForEach(t *testing.T, fn func(t *testing.T, tg *Target)) {
	for _, mk := range []func(testing.TB) *Target{Standalone, Cluster} {
		tg := mk(t)
		t.Run(tg.Name, func(t *testing.T) {
			t.Cleanup(func() { tg.RequireNoSubscriptions(t) })
			fn(t, tg)
		})
	}
}

// Client returns a Client on tg. At the end of the test, unless the test closed it itself, it checks
// that the client holds nothing, renews nothing and is subscribed to nothing, then closes it.
func (tg *Target) Client(t testing.TB, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseClean(t, c) })
	return c
}

// CloseClean checks that c holds, renews and waits on nothing, then closes it.
func CloseClean(t testing.TB, c *redisync.Client) {
	t.Helper()
	cc := core.Of(c)
	defer c.Close() // whatever a check finds, leave nothing running for the tests after this one
	Eventually(t, 10*time.Second, func() error {
		// A give-back of an acquisition whose answer never came keeps its hold's record until Redis
		// answers it; channels linger a moment after their last waiter (pubsub.Linger).
		if holds, renewals := cc.Pending(); holds != 0 || renewals != 0 {
			return fmt.Errorf("client still records %d holds, and renews %d", holds, renewals)
		}
		if n := cc.Notifier().Waiters(); n != 0 {
			return fmt.Errorf("notifier still has %d waiters", n)
		}
		return nil
	})
}

// Redis returns a plain rueidis client on tg, for writing and reading keys as another process would.
func (tg *Target) Redis(t testing.TB) rueidis.Client {
	t.Helper()
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rdb.Close)
	return rdb
}

// Do runs a command through a plain client and fails the test on error.
func Do(t testing.TB, rdb rueidis.Client, args ...string) rueidis.RedisMessage {
	t.Helper()
	m, err := rdb.Do(context.Background(), rdb.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build()).ToMessage()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("%v: %v", args, err)
	}
	return m
}

// Calls returns how many times the nodes of tg have run the given commands (lower case, as INFO
// commandstats names them: "evalsha", "get"), counting those that scripts make too.
func (tg *Target) Calls(t testing.TB, cmds ...string) int64 {
	t.Helper()
	var total int64
	for _, s := range tg.Servers {
		out, err := s.Do("INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || !slices.Contains(cmds, strings.TrimPrefix(name, "cmdstat_")) {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			total += n
		}
	}
	return total
}

// RequireNoSubscriptions fails unless, within 10 s, no node has a Pub/Sub channel subscribed.
func (tg *Target) RequireNoSubscriptions(t testing.TB) {
	t.Helper()
	Eventually(t, 10*time.Second, func() error {
		for _, s := range tg.Servers {
			for _, cmd := range [][]string{{"PUBSUB", "CHANNELS"}, {"PUBSUB", "SHARDCHANNELS"}} {
				out, err := s.Do(cmd...)
				if err != nil {
					return err
				}
				if strings.TrimSpace(out) != "" {
					return fmt.Errorf("%s %v: %q", s.Addr, cmd, out)
				}
			}
		}
		return nil
	})
}

// Eventually retries fn until it succeeds or d passes, then fails the test with fn's last error.
func Eventually(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Mini returns a Client on an embedded miniredis, for quick tests that need no real server.
func Mini(t testing.TB, opts ...redisync.Option) (*miniredis.Miniredis, *redisync.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseClean(t, c) })
	return m, c
}

// QuickClient returns a Client on an embedded Redis, and a func that stops both, for the packages'
// Example_quickStart, which have no *testing.T; the README's Client is on a server of one's own.
func QuickClient() (*redisync.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); m.Close() }
}

// Section detects overlapping holders of a critical section.
type Section struct {
	in, max, entries atomic.Int64
}

// Enter marks one more holder inside.
func (s *Section) Enter() {
	n := s.in.Add(1)
	s.entries.Add(1)
	for {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			return
		}
	}
}

// Leave marks one holder gone.
func (s *Section) Leave() { s.in.Add(-1) }

// Max returns the most holders ever inside at once.
func (s *Section) Max() int64 { return s.max.Load() }

// Entries returns how many times the section was entered.
func (s *Section) Entries() int64 { return s.entries.Load() }

// DoString runs a command through a plain client and returns its reply as text: "" for nil, the
// decimal form for integers, elements joined by "\n" for arrays.
func DoString(t testing.TB, rdb rueidis.Client, args ...string) string {
	t.Helper()
	m := Do(t, rdb, args...)
	return render(&m)
}

func render(m *rueidis.RedisMessage) string {
	if m.IsNil() {
		return ""
	}
	if n, err := m.AsInt64(); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if s, err := m.ToString(); err == nil {
		return s
	}
	if arr, err := m.ToArray(); err == nil {
		parts := make([]string, len(arr))
		for i := range arr {
			parts[i] = render(&arr[i])
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
