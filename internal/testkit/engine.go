package testkit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/lua"
)

// What a test may look at inside a Client, and the bounds the engine promises, are read here and
// nowhere else in the tests of the lock packages, so that a change of the engine's insides touches
// this file only.

// RetryBound is how long a call on a dead server keeps trying before it returns an error.
const RetryBound = send.RetryBound

// Overtime is how long past the end of a wait a call waits for the answer to what it sent at that
// end.
const Overtime = send.Overtime

// StallBound is how long a command in flight on a server that stopped answering may take to fail on
// a Client made with rueidis's default timeouts, as Target.Client makes them: a ConnWriteTimeout of
// 10 s plus two keep-alive intervals of 1 s (see redisync.Wrap).
const StallBound = 12 * time.Second

// Drift is how long before a fixed lease's end, counted from the acquiring command, a hold's ctx
// ends.
func Drift(lease time.Duration) time.Duration { return hold.Drift(lease) }

// Holds returns how many owners' holds c records.
func Holds(c *redisync.Client) int {
	n, _ := core.Of(c).Pending()
	return n
}

// Renewals returns how many holds c's watchdog renews.
func Renewals(c *redisync.Client) int {
	_, n := core.Of(c).Pending()
	return n
}

// Waiters returns how many waits are registered on c's notifier.
func Waiters(c *redisync.Client) int { return core.Of(c).Notifier().Waiters() }

// Idle returns nil when c records no hold, renews none and has no waiter, and otherwise what it
// still has.
func Idle(c *redisync.Client) error {
	var errs []error
	if n := Holds(c); n != 0 {
		errs = append(errs, fmt.Errorf("client still records %d holds", n))
	}
	if n := Renewals(c); n != 0 {
		errs = append(errs, fmt.Errorf("watchdog still renews %d holds", n))
	}
	if n := Waiters(c); n != 0 {
		errs = append(errs, fmt.Errorf("notifier still has %d waiters", n))
	}
	return errors.Join(errs...)
}

// Sent counts the scripts that the Clients of this process send from now until the test ends on
// keys that contain name, but the checks of holds: a Client sends those whenever one of its
// connections ends, which rueidis may do at any moment on a loaded machine. Only one test at a time
// may count.
func Sent(t testing.TB, name string) func() int64 {
	var n atomic.Int64
	send.SetSendTrace(func(_ string, s *lua.Script, keys, _ []string, res *rueidis.RedisResult) {
		if res == nil && !strings.HasSuffix(s.Name(), "_renew.lua") && slices.ContainsFunc(keys, func(k string) bool {
			return strings.Contains(k, name)
		}) {
			n.Add(1)
		}
	})
	t.Cleanup(func() { send.SetSendTrace(nil) })
	return n.Load
}
