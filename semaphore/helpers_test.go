package semaphore_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var seq atomic.Int64

// unique returns a fresh object name, so that tests sharing a server never meet.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), seq.Add(1))
}

// scriptSHA returns the SHA1 that EVALSHA sends for the library script in file.
func scriptSHA(t testing.TB, file string) string { return lua.Load(file).SHA1() }

// spy is a rueidis client that watches the scripts a Client runs: it counts the calls that match,
// and runs after on each of them once Redis has answered.
type spy struct {
	rueidis.Client
	match func(args []string) bool
	calls atomic.Int64
	// lose makes that many matching calls (all, when negative) run on the server but answer with a
	// connection error, as when the connection breaks after the command was sent.
	lose atomic.Int64

	mu    sync.Mutex
	after func()
}

func (s *spy) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	hit := len(args) > 1 && (args[0] == "EVALSHA" || args[0] == "EVAL") && s.match(args)
	res := s.Client.Do(ctx, cmd)
	if hit {
		s.calls.Add(1)
		s.mu.Lock()
		after := s.after
		s.mu.Unlock()
		if after != nil {
			after()
		}
		if n := s.lose.Load(); n < 0 || (n > 0 && s.lose.CompareAndSwap(n, n-1)) {
			res = rueidis.NewErrorResult(io.ErrUnexpectedEOF)
		}
	}
	return res
}

func (s *spy) onCall(fn func()) {
	s.mu.Lock()
	s.after = fn
	s.mu.Unlock()
}

// spied returns a Client on tg whose script calls matching match are counted.
func spied(t *testing.T, tg *testkit.Target, match func(args []string) bool, opts ...redisync.Option) (*redisync.Client, *spy) {
	t.Helper()
	s := &spy{Client: tg.Redis(t), match: match}
	c, err := redisync.Wrap(s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	return c, s
}

// waiting returns how many goroutines of c wait on the semaphore channel of name.
func waiting(c *redisync.Client, name string) int {
	return core.Of(c).Notifier().Waiting(core.Of(c).Names().Prefixed("redisson_sc", name))
}

// channelOf is the Redisson channel of a semaphore, spelled out rather than computed, so that a
// change of layout fails the tests.
func channelOf(name string) string { return "redisson_sc:{" + name + "}" }

// publish sends message on the channel of name as a Redisson process on tg would.
func publish(t testing.TB, tg *testkit.Target, rdb rueidis.Client, name, message string) {
	t.Helper()
	cmd := "PUBLISH"
	if tg.Name == "cluster" {
		cmd = "SPUBLISH"
	}
	testkit.Do(t, rdb, cmd, channelOf(name), message)
}

// listen collects the messages published on the channel of name until the test ends.
func listen(t *testing.T, tg *testkit.Target, rdb rueidis.Client, name string) func() []string {
	t.Helper()
	var (
		mu   sync.Mutex
		msgs []string
	)
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{})
	ctx = rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" || s.Kind == "ssubscribe" {
			close(subscribed)
		}
	})
	cmd := rdb.B().Subscribe().Channel(channelOf(name)).Build()
	if tg.Name == "cluster" {
		cmd = rdb.B().Ssubscribe().Channel(channelOf(name)).Build()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rdb.Receive(ctx, cmd, func(m rueidis.PubSubMessage) {
			mu.Lock()
			msgs = append(msgs, m.Message)
			mu.Unlock()
		})
	}()
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("not subscribed within 5s")
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), msgs...)
	}
}

// get returns the string at key ("" when missing).
func get(t testing.TB, rdb rueidis.Client, key string) string {
	t.Helper()
	v, err := rdb.Do(context.Background(), rdb.B().Get().Key(key).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return v
}

// exists reports whether key exists.
func exists(t testing.TB, rdb rueidis.Client, key string) bool {
	t.Helper()
	n, err := rdb.Do(context.Background(), rdb.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}
