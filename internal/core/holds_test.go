package core

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
)

// newMini returns a Client on an embedded server (testkit.Mini cannot be used here: it imports this
// package).
func newMini(t *testing.T) *Client {
	t.Helper()
	_, c := newMiniServer(t)
	return c
}

// newMiniServer is newMini that returns the server too.
func newMiniServer(t *testing.T) (*miniredis.Miniredis, *Client) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(rdb, true, Config{StallBound: 12 * time.Second}) // as package redisync gives rueidis's defaults
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return m, c
}

// A client lists itself again only once the last listing of that record is older than the period,
// and a late note of an older listing does not hide a newer one.
func TestListAgain(t *testing.T) {
	c := newMini(t)
	const every = time.Hour
	if !c.listAgain("clients:{a}", every) {
		t.Fatal("never listed: must list")
	}
	now := time.Now()
	c.listed("clients:{a}", now, every)
	if c.listAgain("clients:{a}", every) {
		t.Error("listed just now: must not list again")
	}
	if !c.listAgain("clients:{b}", every) {
		t.Error("another record: must list")
	}
	c.listed("clients:{a}", now.Add(-2*every), every) // an older try's answer, late
	if c.listAgain("clients:{a}", every) {
		t.Error("an older listing replaced a newer one")
	}
	c.listed("clients:{c}", now.Add(-2*every), every)
	if !c.listAgain("clients:{c}", every) {
		t.Error("listed longer ago than the period: must list again")
	}
}

// testLock is a lock whose acquisitions need no script: only the holds are exercised.
func testLock(c *Client, shared bool) *Lock {
	return &Lock{c: c, spec: &Spec{Kind: "test", Shared: shared}, plan: &specPlan{}, name: "gate", lease: time.Minute}
}

// holdNow acquires a hold of id through ctx without a command, as a try that succeeded would.
func holdNow(t *testing.T, c *Client, l *Lock, ctx context.Context, id holdID) context.Context {
	t.Helper()
	h, _, _, err := c.enter(ctx, l, id, 0, false)
	if err != nil {
		t.Fatalf("enter: %v", err)
	}
	return h.commit(ctx, new(acq), l.lease, time.Now(), false)
}

// While a call of a hold is on its way no other is sent: not an acquisition, not even a re-entry
// through the ctx being released, and, of read holds, which may be released in any order, not
// another release. So the client knows how many acquisitions Redis counts for the owner when it
// sends each call, which is how a call sent again after a lost answer tells whether the first send
// acted (see once.go).
func TestOneCallOfAHoldAtATime(t *testing.T) {
	c := newMini(t)
	for _, shared := range []bool{false, true} {
		l := testLock(c, shared)
		id := holdID{"gate", 1, ""}
		ctx := withOwnerID(context.Background(), 1)
		outer := holdNow(t, c, l, ctx, id)
		inner := holdNow(t, c, l, outer, id)
		entered, proceed := make(chan int, 1), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- c.release(inner, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
				entered <- held
				<-proceed
				return int64(held - 1), nil
			})
		}()
		if n := <-entered; n != 2 {
			t.Fatalf("shared %v: release sent with %d held, want 2", shared, n)
		}
		if _, _, _, err := c.enter(inner, l, id, 0, false); !errors.Is(err, errs.ErrNotAcquired) {
			t.Fatalf("shared %v: re-entry during the release: %v, want errs.ErrNotAcquired and nothing sent", shared, err)
		}
		second := make(chan error, 1)
		go func() {
			second <- c.release(outer, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
				if held != 1 {
					t.Errorf("shared %v: second release sent with %d held, want 1", shared, held)
				}
				return 0, nil
			})
		}()
		if !shared {
			// Exclusive holds are released innermost first: the outer one is refused at once.
			if err := <-second; !errors.Is(err, errs.ErrNotInnermost) {
				t.Fatalf("outer release during the inner's: %v, want ErrNotInnermost", err)
			}
		} else {
			select {
			case err := <-second:
				t.Fatalf("a second release went while the first was unanswered: %v", err)
			case <-time.After(50 * time.Millisecond): // not a bound: any answer before proceed is wrong
			}
		}
		close(proceed)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !shared {
			second <- c.release(outer, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
				return int64(held - 1), nil
			})
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		if n, _ := c.Pending(); n != 0 {
			t.Fatalf("shared %v: %d holds recorded after both releases", shared, n)
		}
	}
}

// An acquisition abandoned without Unlock while others of its owner are held is still counted: the
// next call is sent with the count Redis keeps.
func TestAbandonedAcquisitionsStayCounted(t *testing.T) {
	c := newMini(t)
	l := testLock(c, false)
	id := holdID{"gate", 1, ""}
	ctx := withOwnerID(context.Background(), 1)
	outer := holdNow(t, c, l, ctx, id)
	inner := holdNow(t, c, l, outer, id)
	abandoned(outer.(*heldCtx).a) // the outer hold's ctx was dropped
	var sent int
	if err := c.release(inner, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
		sent = held
		return int64(held - 1), nil
	}); err != nil {
		t.Fatal(err)
	}
	if sent != 2 {
		t.Fatalf("release sent with %d held, want 2: the abandoned acquisition is still in Redis", sent)
	}
}

// A release that got no answer is sent again, under the same request id, by the next Unlock: it
// releases once, whatever the first send did.
func TestUnansweredReleaseIsSentAgain(t *testing.T) {
	c := newMini(t)
	l := testLock(c, false)
	id := holdID{"gate", 1, ""}
	held := holdNow(t, c, l, withOwnerID(context.Background(), 1), id)
	var rids []string
	var resents []bool
	releaser := func(fail bool) func(string, int, time.Duration, string, bool) (int64, error) {
		return func(_ string, _ int, _ time.Duration, rid string, resent bool) (int64, error) {
			rids, resents = append(rids, rid), append(resents, resent)
			if fail {
				return 0, net.ErrClosed // the connection failed: Redis may or may not have released
			}
			return 0, nil
		}
	}
	if err := c.release(held, id, releaser(true)); !send.IsConnectionError(err) {
		t.Fatalf("first Unlock: %v, want the connection's error", err)
	}
	if err := c.release(held, id, releaser(false)); err != nil {
		t.Fatal(err)
	}
	if len(rids) != 2 || rids[0] != rids[1] || resents[0] || !resents[1] {
		t.Fatalf("sends %q resent %v: want the same request id, sent again the second time", rids, resents)
	}
	if !errors.Is(context.Cause(held), errs.ErrReleased) {
		t.Fatalf("cause %v, want ErrReleased", context.Cause(held))
	}
}
