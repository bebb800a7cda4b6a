package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// Go and Java waiters (Redisson's scripts, default settings on both sides) take their turns in
// arrival order, whoever holds the lock first: a Java acquisition lowers every deadline by Redisson's
// slot, which must not push a Go waiter's deadline into the past (Redisson's stale-waiter sweep would
// then drop it).
func TestMixedFleetArrivalOrder(t *testing.T) {
	type waiter struct {
		who    string
		thread int64         // a Java thread; 0 for a Go waiter
		wait   time.Duration // a Java tryLock(waitTime); 0 for lock()
	}
	for _, tc := range []struct {
		name       string
		javaHolder bool
		line       []waiter
	}{
		{"java holds", true, []waiter{{"J1", 2, 0}, {"G1", 0, 0}, {"J2", 3, 0}, {"G2", 0, 0}}},
		{"go holds", false, []waiter{{"G1", 0, 0}, {"J1", 2, 0}, {"G2", 0, 0}, {"J2", 3, 0}}},
		{"java tryLock", true, []waiter{{"J1", 2, time.Minute}, {"G1", 0, 0}, {"J2", 3, time.Minute}, {"G2", 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
				n := name(t)
				java := newJavaFair(t, tg, n)
				goHolder := newLock(t, tg.Client(t), n)
				var held context.Context
				if tc.javaHolder {
					if !java.lock(context.Background(), 1, 0) {
						t.Fatal("the Java holder did not acquire")
					}
				} else {
					held = mustLock(t, goHolder, context.Background())
				}
				ln := newLine(t)
				var ends []<-chan error
				var want []string
				for i, w := range tc.line {
					if w.thread != 0 {
						ends = append(ends, ln.joinJava(java, w.thread, w.wait, w.who, 0))
					} else {
						ends = append(ends, ln.join(newLock(t, tg.Client(t), n), context.Background(), w.who, 0))
					}
					want = append(want, w.who)
					waitQueued(t, goHolder, i+1)
				}
				if tc.javaHolder {
					java.unlock(1)
				} else {
					mustUnlock(t, goHolder, held)
				}
				for i, end := range ends {
					select {
					case err := <-end:
						if err != nil {
							t.Fatalf("%s: %v", tc.line[i].who, err)
						}
					case <-time.After(30 * time.Second):
						t.Fatalf("%s did not get its turn", tc.line[i].who)
					}
				}
				ln.check(want...)
				if n := waiting(t, goHolder); n != 0 {
					t.Fatalf("%d left in the queue", n)
				}
			})
		})
	}
}

// A Go waiter's first deadline is Redisson's estimate (the holder's lease, or the last waiter's
// deadline, plus a slot), so that a Java waiter behind it, which builds on it and never pushes its
// own on, keeps its place through the holder's whole lease as it would behind a Java waiter.
func TestGoDeadlineIsRedissonsEstimate(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		rdb := tg.Redis(t)
		java := newJavaFair(t, tg, n)
		java.lease = 10 * time.Minute // a Java lock(10, MINUTES)
		if ok, _ := java.try(1, 0); !ok {
			t.Fatal("the Java holder did not acquire")
		}
		defer java.unlock(1)
		l := newLock(t, tg.Client(t), n)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := testkit.Background(func() (context.Context, error) { return l.Lock(ctx) })
		waitQueued(t, l, 1)
		deadline, now := deadlineOf(t, rdb, n, 0)
		if want := now.Add(java.lease - time.Minute + java.wait); deadline.Before(want) {
			t.Fatalf("Go waiter's deadline %v after now, want at least the lease and a slot (%v)",
				deadline.Sub(now), want.Sub(now))
		}
		if ok, _ := java.try(2, 0); ok {
			t.Fatal("the Java waiter acquired a held lock")
		}
		waitQueued(t, l, 2)
		javaDeadline, _ := deadlineOf(t, rdb, n, 1)
		if d := javaDeadline.Sub(deadline); d < java.wait-time.Second {
			t.Fatalf("the Java waiter's deadline is %v after ours, want its slot %v", d, java.wait)
		}
		cancel()
		if r := <-res; !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("Lock: %v, want Canceled", r.Err)
		}
		java.giveUp(2, 0)
	})
}

// record's score: when the waiter's last try ran.
func triedAt(t *testing.T, tg *testkit.Target, n, owner string) time.Time {
	t.Helper()
	rec := testkit.DoString(t, tg.Redis(t), "HGET", recordsKey(n), owner)
	us, err := strconv.ParseInt(strings.Fields(rec + " x")[0], 10, 64)
	if err != nil {
		t.Fatalf("record of %s: %q", owner, rec)
	}
	return time.UnixMicro(us)
}

// A Go waiter whose process died no longer blocks the line once a Go process sees that its Client
// does not listen for its turn any more (and its last try is over 2 s old), long before its
// deadline (5 minutes by default).
func TestDeadGoWaiterPassedOverAtOnce(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		holder := newLock(t, tg.Client(t), n)
		held := mustLock(t, holder, context.Background())
		ln := newLine(t)
		a := ln.join(newLock(t, tg.Client(t), n), context.Background(), "A", 0)
		waitQueued(t, holder, 1)
		dead := tg.Client(t, redisync.WithRecheckInterval(time.Hour))
		dctx := redisync.WithOwner(context.Background())
		d := ln.join(newLock(t, dead, n), dctx, "D", 0)
		waitQueued(t, holder, 2)
		c := ln.join(newLock(t, tg.Client(t), n), context.Background(), "C", 0)
		waitQueued(t, holder, 3)
		owner := ownerOf(dead, dctx)
		testkit.Eventually(t, 10*time.Second, func() error { // D listens, and its try left a record
			if testkit.DoString(t, tg.Redis(t), "HEXISTS", recordsKey(n), owner) != "1" {
				return errors.New("no record for D")
			}
			return nil
		})
		dead.Close()
		if err := <-d; !errors.Is(err, redisync.ErrClosed) {
			t.Fatalf("D: %v, want ErrClosed", err)
		}
		// The grace for a Client still subscribing: D's last try must be over 2 s old.
		tried := triedAt(t, tg, n, owner)
		testkit.Eventually(t, 10*time.Second, func() error {
			if age := serverTime(t, tg.Redis(t), n).Sub(tried); age <= 2*time.Second {
				return fmt.Errorf("D's last try is only %v old", age)
			}
			return nil
		})
		deadline, _ := deadlineOf(t, tg.Redis(t), n, 1)
		mustUnlock(t, holder, held)
		for _, end := range []<-chan error{a, c} {
			select {
			case err := <-end:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the line still waits for the dead Go waiter")
			}
		}
		ln.check("A", "C")
		if left := time.Until(deadline); left < time.Minute {
			t.Fatalf("C acquired only %v before D's deadline", left)
		}
		if n := waiting(t, holder); n != 0 {
			t.Fatalf("%d left in the queue", n)
		}
	})
}
