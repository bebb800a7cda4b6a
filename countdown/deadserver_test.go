package countdown

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

// armed returns a latch of count 1 on a server of its own, and that server's target.
func armed(t *testing.T, opts ...redisync.Option) (*testkit.Target, *redisync.Client, *Latch) {
	t.Helper()
	tg := testkit.Own(t)
	c := tg.Client(t, opts...)
	l := newLatch(t, c, "latch-dead")
	if ok, err := l.TrySetCount(context.Background(), 1); err != nil || !ok {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
	return tg, c, l
}

// TestLatchTryAwaitReturnsOnDeadServer: a wait bound is kept when the server is gone, and the
// connection's error comes back.
func TestLatchTryAwaitReturnsOnDeadServer(t *testing.T) {
	tg, _, l := armed(t)
	if err := tg.Servers[0].Kill(); err != nil {
		t.Fatal(err)
	}
	const wait = 2 * time.Second
	err := testkit.ReturnsWithin(t, time.Now(), wait+send.Overtime, "TryAwait(2s) on a killed server", func() error {
		err := l.TryAwait(context.Background(), wait)
		if err == nil {
			return errors.New("TryAwait reported the latch open")
		}
		return err
	})
	if err == nil || errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryAwait on a killed server returned %v, want the connection's error", err)
	}
}

// TestLatchTryAwaitReturnsOnStalledServer: the wait bound is kept when the server stops answering.
func TestLatchTryAwaitReturnsOnStalledServer(t *testing.T) {
	tg, _, l := armed(t)
	s := tg.Servers[0]
	testkit.Stall(t, s, "SIGSTOP")
	const wait = 2 * time.Second
	err := testkit.ReturnsWithin(t, time.Now(), wait+send.Overtime, "TryAwait(2s) on a stalled server", func() error {
		if err := l.TryAwait(context.Background(), wait); !errors.Is(err, redisync.ErrNotAcquired) {
			return fmt.Errorf("TryAwait = %v; want ErrNotAcquired", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLatchAwaitReturnsWhenServerDies: a parked Await learns at its next re-check that the server is
// gone, and returns the connection's error within the recheck interval and send.RetryBound.
func TestLatchAwaitReturnsWhenServerDies(t *testing.T) {
	const recheck = time.Second
	tg, c, l := armed(t, redisync.WithRecheckInterval(recheck))
	done := make(chan error, 1)
	go func() { done <- l.Await(context.Background()) }()
	testkit.Eventually(t, 5*time.Second, func() error {
		if !core.Of(c).Notifier().Subscribed(l.channel) {
			return errors.New("the waiter's channel is not subscribed")
		}
		return nil
	})
	if err := tg.Servers[0].Kill(); err != nil {
		t.Fatal(err)
	}
	err := testkit.ReturnsWithin(t, time.Now(), recheck+send.RetryBound, "Await on a server that died", func() error { return <-done })
	if err == nil {
		t.Fatal("Await on a killed server returned no error")
	}
}

// TestLatchCountReturnsOnDeadServer: a query with a ctx without deadline returns an error within
// send.RetryBound on a dead or stalled server.
func TestLatchCountReturnsOnDeadServer(t *testing.T) {
	for _, fault := range []string{"kill", "pause"} {
		t.Run(fault, func(t *testing.T) {
			tg, _, l := armed(t)
			s := tg.Servers[0]
			if fault == "kill" {
				if err := s.Kill(); err != nil {
					t.Fatal(err)
				}
			} else {
				testkit.Stall(t, s, "SIGSTOP")
			}
			err := testkit.ReturnsWithin(t, time.Now(), send.RetryBound, "Count", func() error {
				_, err := l.Count(context.Background())
				return err
			})
			if err == nil {
				t.Fatal("Count on a dead server returned no error")
			}
		})
	}
}
