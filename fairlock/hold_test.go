package fairlock_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// Redisson's testLeaseTimeout: holds that end with their lease, never released, pass the
// lock down the queue in order, each waiter trying when the lease before it ends rather than at its
// next re-check.
func TestLeasesEndingWithoutUnlockPassTheQueueOn(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		const lease = 500 * time.Millisecond
		// Fencing tokens come from the acquisitions in Redis: their order is the order of the grants,
		// whatever order the waiters' goroutines report them in on a busy machine.
		opts := []fairlock.Option{fairlock.WithLease(lease), fairlock.WithSlot(2 * time.Minute), fairlock.WithFencing()}
		holder := newLock(t, tg.Client(t), n, opts...)
		held := mustLock(t, holder, context.Background())
		start := time.Now()
		const waiters = 4
		type grant struct {
			who   int
			token int64
		}
		grants := make(chan grant, waiters)
		var granted atomic.Int32
		ended := make(chan func(), waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			l := newLock(t, tg.Client(t, redisync.WithRecheckInterval(time.Hour)), n, opts...)
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := l.Lock(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				token, _ := l.Token(h)
				granted.Add(1)
				grants <- grant{i, token}
				<-h.Done() // the lease ends; nobody unlocks before the last grant
				ended <- func() { l.Unlock(h) }
			}()
			// On a busy machine a lease may end before every waiter is in line: the waiters that
			// arrived are then in the queue or through it.
			testkit.Eventually(t, 10*time.Second, func() error {
				if q, g := waiting(t, holder), int(granted.Load()); q+g != i+1 {
					return fmt.Errorf("%d in the queue and %d granted, want %d arrived", q, g, i+1)
				}
				return nil
			})
		}
		wg.Wait()
		close(grants)
		close(ended)
		for unlock := range ended {
			unlock()
		}
		<-held.Done()
		holder.Unlock(held)
		var order []grant
		for g := range grants {
			order = append(order, g)
		}
		slices.SortFunc(order, func(a, b grant) int { return cmp.Compare(a.token, b.token) })
		for i, g := range order {
			if g.who != i {
				t.Fatalf("grant %d went to waiter %d: out of arrival order", i, g.who)
			}
		}
		if len(order) != waiters {
			t.Fatalf("%d of %d waiters were granted the lock", len(order), waiters)
		}
		// Each grant comes when the lease before it ends (4 x 500 ms, plus the queue's set-up); waiting
		// for a re-check would take at least a third of the 2-minute slot for each.
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("%d leases of %v took %v to pass down the queue", waiters+1, lease, took)
		}
	})
}
