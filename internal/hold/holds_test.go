package hold

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/minitest"
	"github.com/redisync/redisync/internal/send"
)

// newMini returns the holds of a client on an embedded server.
func newMini(t *testing.T) *Holds {
	t.Helper()
	_, rdb := minitest.Mini(t)
	s := send.New(rdb, true, "test", 0, 0)
	c := New(s, &Events{}, 30*time.Second, false)
	t.Cleanup(func() {
		s.Shut()
		c.Close()
		s.Drain()
	})
	return c
}

// testLock is an object whose acquisitions need no script: only the holds are exercised.
type testLock struct{ shared bool }

func (l testLock) Describe() (string, string, bool) { return "test", "gate", l.shared }
func (testLock) Field(owner int64) (string, Renewal) {
	return send.Numbered([]string{"test"}, owner), Renewal{}
}

// holdNow acquires a hold of id through ctx without a command, as a try that succeeded would.
func holdNow(t *testing.T, c *Holds, l testLock, ctx context.Context, id ID) context.Context {
	t.Helper()
	a := new(Acq)
	if _, _, err := c.Enter(ctx, a, l, id, 0, false); err != nil {
		t.Fatalf("enter: %v", err)
	}
	return a.Commit(ctx, time.Minute, time.Now(), false, false)
}

// While a call of a hold is on its way no other is sent: not an acquisition, not even a re-entry
// through the ctx being released, and, of read holds, which may be released in any order, not
// another release. So the client knows how many acquisitions Redis counts for the owner when it
// sends each call, which is how a call sent again after a lost answer tells whether the first send
// acted (see once.go).
func TestOneCallOfAHoldAtATime(t *testing.T) {
	c := newMini(t)
	for _, shared := range []bool{false, true} {
		l := testLock{shared}
		id := ID{"gate", 1, ""}
		ctx := withOwnerID(context.Background(), 1)
		outer := holdNow(t, c, l, ctx, id)
		inner := holdNow(t, c, l, outer, id)
		entered, proceed := make(chan int, 1), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- c.Release(inner, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
				entered <- held
				<-proceed
				return int64(held - 1), nil
			})
		}()
		if n := <-entered; n != 2 {
			t.Fatalf("shared %v: release sent with %d held, want 2", shared, n)
		}
		if _, _, err := c.Enter(inner, new(Acq), l, id, 0, false); !errors.Is(err, errs.ErrNotAcquired) {
			t.Fatalf("shared %v: re-entry during the release: %v, want errs.ErrNotAcquired and nothing sent", shared, err)
		}
		second := make(chan error, 1)
		go func() {
			second <- c.Release(outer, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
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
			second <- c.Release(outer, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
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
	l := testLock{false}
	id := ID{"gate", 1, ""}
	ctx := withOwnerID(context.Background(), 1)
	outer := holdNow(t, c, l, ctx, id)
	inner := holdNow(t, c, l, outer, id)
	abandoned(outer.(*heldCtx).a) // the outer hold's ctx was dropped
	var sent int
	if err := c.Release(inner, id, func(_ string, held int, _ time.Duration, _ string, _ bool) (int64, error) {
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
	l := testLock{false}
	id := ID{"gate", 1, ""}
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
	if err := c.Release(held, id, releaser(true)); !send.IsConnectionError(err) {
		t.Fatalf("first Unlock: %v, want the connection's error", err)
	}
	if err := c.Release(held, id, releaser(false)); err != nil {
		t.Fatal(err)
	}
	if len(rids) != 2 || rids[0] != rids[1] || resents[0] || !resents[1] {
		t.Fatalf("sends %q resent %v: want the same request id, sent again the second time", rids, resents)
	}
	if !errors.Is(context.Cause(held), errs.ErrReleased) {
		t.Fatalf("cause %v, want ErrReleased", context.Cause(held))
	}
}
