package hold

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/lua"
)

// A hold acquired just before a renewal round started is not in that round. When the server stalls,
// that round and the next one both run out, and the hold's own first renewal is still in flight when
// its lease may end: the holder must be told then, not when that renewal gives up.
func TestWatchdogEndsHoldWhoseFirstRenewalIsLate(t *testing.T) {
	// Pure timer logic: in a synctest bubble the clock moves only when every goroutine waits, so the
	// bounds below are exact whatever the machine's load, and the test takes no wall time.
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		entered := make(chan time.Time, 16)
		stalled := func(ctx context.Context, _ *lua.Script, _, _ []string, _ bool, _ time.Duration) rueidis.RedisResult {
			entered <- time.Now()
			<-ctx.Done() // a stalled server: no reply before the round's own timeout
			return rueidis.RedisResult{}
		}
		w := newWatchdog(stalled, nil, ttl, false)
		defer w.close()
		script := lua.Load("rlock_renew.lua")
		other := w.add(nil, Renewal{Script: script, Keys: []string{"other"}, Args: []string{"o"}}, lostFunc(func(error) {}), false)
		w.confirm(other, time.Now())

		lost := make(chan time.Time, 1)
		var cause error
		e := w.add(nil, Renewal{Script: script, Keys: []string{"late"}, Args: []string{"o"}}, lostFunc(func(err error) {
			cause = err
			lost <- time.Now()
		}), false)
		// The hold's acquisition was sent just before the round began, and confirmed just after.
		roundAt := <-entered
		start := roundAt.Add(-20 * time.Millisecond)
		w.confirm(e, start)

		select {
		case at := <-lost:
			if end := start.Add(ttl); at.After(end) {
				t.Fatalf("holder told %v after its lease may have ended", at.Sub(end))
			}
			if at.Before(start.Add(ttl - Drift(ttl))) {
				t.Fatalf("holder told %v before the lease's end less the drift allowance", start.Add(ttl-Drift(ttl)).Sub(at))
			}
			if !errors.Is(cause, errs.ErrLost) {
				t.Fatalf("cause %v, want ErrLost", cause)
			}
		case <-time.After(2 * ttl):
			t.Fatal("hold never reported lost while the server stalled")
		}
	})
}
