package rwlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

// TestRWLockQueriesReturnOnDeadServer: every query of both sides returns an error
// within core.RetryBound on a dead or stalled server, with a ctx that has no deadline.
func TestRWLockQueriesReturnOnDeadServer(t *testing.T) {
	for _, fault := range []string{"kill", "SIGSTOP"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel() // a server of its own, and time spent waiting out a bound
			tg := testkit.Own(t)
			rw := mustNew(t, tg.Client(t), "dead")
			if fault == "kill" {
				if err := tg.Servers[0].Kill(); err != nil {
					t.Fatal(err)
				}
			} else {
				testkit.Stall(t, tg.Servers[0], fault)
			}
			ctx := context.Background()
			owned := redisync.WithOwner(ctx) // HoldCount asks Redis only for an owner
			queries := map[string]func() error{}
			for side, l := range map[string]interface {
				IsLocked(context.Context) (bool, error)
				HoldCount(context.Context) (int, error)
				TTL(context.Context) (time.Duration, error)
			}{"read": rw.ReadLock(), "write": rw.WriteLock()} {
				queries[side+" IsLocked"] = func() error { _, err := l.IsLocked(ctx); return err }
				queries[side+" HoldCount"] = func() error { _, err := l.HoldCount(owned); return err }
				queries[side+" TTL"] = func() error { _, err := l.TTL(ctx); return err }
			}
			errs := make(chan error, len(queries))
			for what, q := range queries {
				go func() {
					if err := q(); err == nil {
						errs <- fmt.Errorf("%s on a dead server returned no error", what)
					} else {
						errs <- nil
					}
				}()
			}
			start := time.Now()
			for range queries {
				if err := testkit.ReturnsWithin(t, start, core.RetryBound, "a query", func() error { return <-errs }); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
