package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
)

// TestFairTryArrivingAfterItsWaiterLeft holds up a fair lock waiter's first try in the network
// until the waiter has given up and left the line, and then lets it reach Redis, as a request
// written on a connection that a stalled server's client abandoned runs once the server resumes.
// The try must not take a place in line for an acquisition that is over: nobody would come back
// for it, and the place would keep the lock from everyone for a whole slot (5 minutes by default).
func TestFairTryArrivingAfterItsWaiterLeft(t *testing.T) {
	for name, env := range map[string]func(*testing.T) *eoEnv{"standalone": eoStandalone, "cluster": eoCluster} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*eoCall)
			defer cancel()
			name := "late-fair-" + e.tg.Name
			c1, c2, c3 := e.tg.Client(t), e.tg.Client(t), e.tg.Client(t)
			fair := func(c *redisync.Client) *fairlock.Lock {
				l, err := fairlock.New(c, name)
				require.NoError(t, err)
				return l
			}
			l1, l2, l3 := fair(c1), fair(c2), fair(c3)
			h1, err := l1.Lock(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l1.Unlock(h1) }) // on failure; a second Unlock changes nothing

			f := e.arm(redistest.Rule{Cut: redistest.Delay, Key: name, Match: from(c2)})
			_, err = l2.TryLock(ctx, 2*time.Second)
			require.ErrorIs(t, err, redisync.ErrNotAcquired, "a waiter behind a holder")
			require.True(t, f.HasFired(), "the waiter's first try was not held up")
			testkit.Eventually(t, 10*time.Second, func() error {
				return waitingIs(ctx, l1, 0)
			})

			reply, err := f.Deliver()
			require.NoError(t, err)
			t.Logf("the held-up try, run after its waiter left, answered %q", reply)
			require.NoError(t, waitingIs(ctx, l1, 0), "a try that arrived after its waiter left took a place in line")

			require.NoError(t, l1.Unlock(h1))
			h3, err := l3.TryLock(ctx, 0)
			require.NoError(t, err, "the lock is free and nobody waits for it")
			require.NoError(t, l3.Unlock(h3))
		})
	}
}

func waitingIs(ctx context.Context, l *fairlock.Lock, want int) error {
	n, err := l.Waiting(ctx)
	if err == nil && n != want {
		err = fmt.Errorf("the queue holds %d owners, want %d", n, want)
	}
	return err
}
