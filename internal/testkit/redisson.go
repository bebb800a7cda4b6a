package testkit

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Java plays a Redisson process on a target: it runs Redisson's scripts with Redisson's keys and
// arguments, and subscribes and publishes as Redisson does (sharded Pub/Sub on a cluster).
type Java struct {
	t   testing.TB
	tg  *Target
	rdb rueidis.Client
}

// Java returns a Redisson process on tg.
func (tg *Target) Java(t testing.TB) *Java {
	return &Java{t: t, tg: tg, rdb: tg.Redis(t)}
}

// PublishCommand is Redisson's getPublishCommand on tg: "spublish" on a cluster, else "publish".
func (j *Java) PublishCommand() string {
	if j.tg.Name == "cluster" {
		return "spublish"
	}
	return "publish"
}

// Eval runs script with keys and args as Redisson's evalWriteAsync does, and fails the test on error.
func (j *Java) Eval(script string, keys []string, args ...string) rueidis.RedisMessage {
	j.t.Helper()
	m, err := j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(script).Numkeys(int64(len(keys))).
		Key(keys...).Arg(args...).Build()).ToMessage()
	if err != nil && !rueidis.IsRedisNil(err) {
		j.t.Fatalf("Redisson script on %v: %v", keys, err)
	}
	return m
}

// EvalInt is Eval of a script that answers an integer (false: 0).
func (j *Java) EvalInt(script string, keys []string, args ...string) int64 {
	j.t.Helper()
	m := j.Eval(script, keys, args...)
	if m.IsNil() {
		return 0
	}
	n, err := m.AsInt64()
	if err != nil {
		j.t.Fatalf("Redisson script on %v: %v", keys, err)
	}
	return n
}

// Publish sends message on channel as Redisson does.
func (j *Java) Publish(channel, message string) {
	j.t.Helper()
	Do(j.t, j.rdb, j.PublishCommand(), channel, message)
}

// Subscription is a Redisson subscription to one channel: its messages, in order.
type Subscription struct {
	t        testing.TB
	channel  string
	messages chan string
}

// Subscribe subscribes to channel as Redisson's pub/sub service does, and returns once the server
// confirmed it. The subscription ends with the test.
func (j *Java) Subscribe(channel string) *Subscription {
	j.t.Helper()
	s := &Subscription{t: j.t, channel: channel, messages: make(chan string, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{})
	ctx = rueidis.WithOnSubscriptionHook(ctx, func(p rueidis.PubSubSubscription) {
		if p.Kind == "subscribe" || p.Kind == "ssubscribe" {
			close(subscribed)
		}
	})
	cmd := j.rdb.B().Subscribe().Channel(channel).Build()
	if j.tg.Name == "cluster" {
		cmd = j.rdb.B().Ssubscribe().Channel(channel).Build()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.rdb.Receive(ctx, cmd, func(m rueidis.PubSubMessage) {
			select {
			case s.messages <- m.Message:
			default:
			}
		})
	}()
	j.t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		j.t.Fatalf("not subscribed to %s within 10s", channel)
	}
	return s
}

// Next returns the next message, or false when none arrives within d.
func (s *Subscription) Next(d time.Duration) (string, bool) {
	select {
	case m := <-s.messages:
		return m, true
	case <-time.After(d):
		return "", false
	}
}

// Until is a parked Redisson waiter (one whose try after subscribing failed): it waits for a message
// on the channel and runs try after each one until try succeeds. It fails the test when d passes
// first: a Redisson waiter without a lease to wait for (acquire(), await()) would wait for ever.
func (s *Subscription) Until(d time.Duration, what string, try func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, ok := s.Next(time.Until(deadline)); !ok {
			s.t.Fatalf("%s: no message on %s made it succeed within %v", what, s.channel, d)
		}
		if try() {
			return
		}
	}
}

// Subscribers returns how many connections, on all nodes of tg, follow channel (classic or sharded).
func (tg *Target) Subscribers(t testing.TB, channel string) int {
	t.Helper()
	total := 0
	for _, s := range tg.Servers {
		for _, cmd := range []string{"NUMSUB", "SHARDNUMSUB"} {
			out, err := s.Do("PUBSUB", cmd, channel)
			if err != nil {
				t.Fatal(err)
			}
			if f := strings.Fields(out); len(f) == 2 {
				n, _ := strconv.Atoi(f[1])
				total += n
			}
		}
	}
	return total
}
