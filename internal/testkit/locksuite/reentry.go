package locksuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// TestReentry: an owner re-enters ten deep through the ctx each Lock returns, the hold count going
// up by one each time and down by one at each Unlock, which ends its own ctx (with ErrReleased) and
// is refused when repeated; another owner stays out until the last Unlock. On an exclusive kind an
// Unlock out of order is refused and changes nothing, and each Unlock ends exactly its own ctx. On
// a shared kind the holds go in any order, the outermost first too.
func (s *Suite) TestReentry() {
	s.need(s.Kind.Reentrant, "re-entry")
	s.each(func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		l := s.newLock(t, tg.Client(t), n, Options{})
		rival := s.rival(t, tg.Client(t), n)
		const depth = 10
		var held []context.Context
		ctx := context.Background()
		for i := 1; i <= depth; i++ {
			ctx = lock(t, l, ctx)
			held = append(held, ctx)
			require.Equal(t, i, holdCount(t, l, ctx), "hold count at depth %d", i)
		}
		require.True(t, isHeld(t, l, ctx), "IsHeld at depth %d", depth)
		require.True(t, isLocked(t, l), "IsLocked at depth %d", depth)
		refused(t, rival, "held")
		// release ends hold i, leaving left holds.
		release := func(i, left int) {
			t.Helper()
			unlock(t, l, held[i])
			require.ErrorIs(t, context.Cause(held[i]), redisync.ErrReleased, "cause of depth %d's ctx after its Unlock", i+1)
			require.ErrorIs(t, l.Unlock(held[i]), redisync.ErrNotHeld, "second Unlock at depth %d", i+1)
			// The ctx names the owner even once it has ended: the count is the owner's.
			require.Equal(t, left, holdCount(t, l, held[i]), "hold count after the Unlock at depth %d", i+1)
			require.Equal(t, left > 0, isLocked(t, l), "IsLocked with %d holds left", left)
			if left == 1 {
				refused(t, rival, "held once")
			}
		}
		if s.Kind.Shared {
			for i := range depth {
				release(i, depth-1-i)
			}
		} else {
			require.ErrorIs(t, l.Unlock(held[0]), redisync.ErrNotInnermost, "Unlock of the outermost hold first")
			require.Equal(t, depth, holdCount(t, l, held[0]), "hold count after a refused Unlock")
			alive(t, "after a refused Unlock", held...)
			for i := depth - 1; i >= 0; i-- {
				release(i, i)
				alive(t, "after an inner Unlock", held[:i]...)
			}
		}
		require.False(t, isLocked(t, l), "IsLocked after the last Unlock")
		require.False(t, isHeld(t, l, held[0]), "IsHeld after the last Unlock")
		unlock(t, rival, lock(t, rival, context.Background()))
	})
}

// TestForeignUnlock: an Unlock with a ctx that carries no hold of the lock (none at all, another
// owner's, the same owner id on another Client) returns ErrNotHeld and changes nothing.
func (s *Suite) TestForeignUnlock() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		l := s.newLock(t, tg.Client(t), n, Options{})
		elsewhere := s.newLock(t, tg.Client(t), n, Options{})
		held := lock(t, l, context.Background())
		for _, u := range []struct {
			what string
			l    Lock
			ctx  context.Context
		}{
			{"a ctx without owner", l, context.Background()},
			{"another owner", l, redisync.WithOwner(context.Background())},
			{"the same owner id on another Client", elsewhere, held},
		} {
			require.ErrorIs(t, u.l.Unlock(u.ctx), redisync.ErrNotHeld, "Unlock with %s", u.what)
		}
		require.Equal(t, 1, holdCount(t, l, held), "hold count after foreign Unlocks")
		alive(t, "after foreign Unlocks", held)
		unlock(t, l, held)
		require.ErrorIs(t, l.Unlock(held), redisync.ErrNotHeld, "second Unlock")
	})
}

// TestUnlockAfterCancel: Unlock releases a hold whose ctx has ended with its parent's.
func (s *Suite) TestUnlockAfterCancel() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		l := s.newLock(t, tg.Client(t), name(t), Options{})
		parent, cancel := context.WithCancel(context.Background())
		held := lock(t, l, parent)
		cancel()
		require.ErrorIs(t, held.Err(), context.Canceled, "the hold's ctx after its parent's cancel")
		unlock(t, l, held)
		require.False(t, isLocked(t, l), "IsLocked after the Unlock of a cancelled hold")
	})
}

// TestDo: Do runs fn holding the lock, returns fn's error and unlocks; when the hold is lost under
// fn, fn's ctx ends and Do returns fn's error joined with ErrLost.
func (s *Suite) TestDo() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		c := tg.Client(t)
		l := s.newLock(t, c, n, Options{})
		boom := errors.New("boom")
		err := l.Do(context.Background(), func(ctx context.Context) error {
			require.True(t, isHeld(t, l, ctx), "IsHeld inside Do")
			return boom
		})
		require.ErrorIs(t, err, boom, "Do's error")
		require.False(t, isLocked(t, l), "IsLocked after Do")

		force := s.newLock(t, c, n, Options{}) // on the holder's Client: the hold ends at once
		err = l.Do(context.Background(), func(ctx context.Context) error {
			ok, err := force.ForceUnlock(context.Background())
			require.NoError(t, err, "ForceUnlock inside Do")
			require.True(t, ok, "ForceUnlock inside Do")
			<-ctx.Done()
			return boom
		})
		require.ErrorIs(t, err, boom, "Do's error when the hold was lost")
		require.ErrorIs(t, err, redisync.ErrLost, "Do's error when the hold was lost")
	})
}

// TestNonReentrant: with NonReentrant an owner that locks again gets ErrAlreadyHeld at once,
// whatever its wait bound, and its hold, the lock's keys and the Client's waits are as before.
func (s *Suite) TestNonReentrant() {
	s.need(s.Kind.NonReentrant, "NonReentrant option")
	s.each(func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := s.newLock(t, c, name(t), Options{NonReentrant: true})
		held := lock(t, l, context.Background())
		keys := tg.Keys(t)
		const wait = 5 * time.Second
		start := time.Now()
		_, err := l.TryLock(held, wait)
		require.ErrorIs(t, err, redisync.ErrAlreadyHeld, "TryLock again")
		require.Less(t, time.Since(start), wait, "the refused TryLock waited out its bound")
		_, err = l.Lock(held)
		require.ErrorIs(t, err, redisync.ErrAlreadyHeld, "Lock again")
		require.Equal(t, 1, holdCount(t, l, held), "hold count after refused re-entries")
		alive(t, "after refused re-entries", held)
		require.Empty(t, tg.NewKeys(t, keys), "keys added by refused re-entries (a waiter recorded?)")
		require.Zero(t, testkit.Waiters(c), "waits left on the Client by refused re-entries")
		unlock(t, l, held)
	})
}

// TestShorterReentryLease: a re-entry with a shorter fixed lease never cuts short what the outer
// hold was promised, by a fixed lease or by the watchdog: the lock's TTL stays the outer one, and
// once the inner lease has ended (its ctx with ErrLost), the outer hold lives on and keeps other
// owners out.
func (s *Suite) TestShorterReentryLease() {
	s.need(s.Kind.Reentrant, "re-entry")
	s.need(s.Kind.Lease, "fixed lease")
	for _, outer := range []string{"fixed lease", "watchdog"} {
		s.Run(outer, func() {
			s.each(func(t *testing.T, tg *testkit.Target) {
				n := name(t)
				inner, c, o := time.Second, (*redisync.Client)(nil), Options{Lease: 20 * time.Second}
				if outer == "watchdog" {
					inner, c, o = 500*time.Millisecond, tg.Client(t, redisync.WithWatchdogTimeout(20*time.Second)), Options{}
				} else {
					c = tg.Client(t)
				}
				long := s.newLock(t, c, n, o)
				short := s.newLock(t, c, n, Options{Lease: inner})
				rival := s.rival(t, tg.Client(t), n)

				out := lock(t, long, context.Background())
				in := lock(t, short, out)
				require.GreaterOrEqual(t, ttl(t, long), 10*time.Second, "TTL after a re-entry with a %v lease", inner)
				outEnd, _ := out.Deadline()
				inEnd, ok := in.Deadline()
				require.True(t, ok, "the inner hold's ctx has no deadline")
				require.LessOrEqual(t, time.Until(inEnd), inner, "the inner hold's deadline is past its own lease")
				if outer == "fixed lease" {
					require.False(t, inEnd.After(outEnd), "the inner hold's deadline is past the outer one's")
				}
				require.ErrorIs(t, ended(t, in, inner+testkit.Margin, "inner hold"), redisync.ErrLost, "cause of the inner ctx at its lease's end")
				alive(t, "after the inner lease ended", out)
				refused(t, rival, "outer hold still on")
				unlock(t, short, in)
				require.GreaterOrEqual(t, ttl(t, long), 10*time.Second, "TTL after the inner Unlock")
				alive(t, "after the inner Unlock", out)
				unlock(t, long, out)
			})
		})
	}
}

// TestInProcessWait: on an exclusive kind a goroutine that re-enters through an outer hold's ctx
// while an inner hold is open waits in the process, sending nothing, until that inner hold is
// released; its wait bound or its ctx end that wait.
func (s *Suite) TestInProcessWait() {
	s.need(s.Kind.Reentrant && !s.Kind.Shared, "exclusive re-entry")
	s.each(func(t *testing.T, tg *testkit.Target) {
		// A fixed lease: no renewal sends a script while the scripts are counted.
		l := s.newLock(t, tg.Client(t), name(t), Options{Lease: time.Minute})
		outer := lock(t, l, context.Background())
		inner := lock(t, l, outer)
		sent := testkit.Sent(t, name(t))
		_, err := l.TryLock(outer, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "TryLock(outer, 0) with an inner hold open")
		_, err = l.TryLock(outer, 50*time.Millisecond)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "TryLock(outer, 50ms) with an inner hold open")
		ctx, cancel := context.WithCancelCause(outer)
		cause := errors.New("gave up")
		got := testkit.Background(func() (context.Context, error) { return l.Lock(ctx) })
		cancel(cause)
		a := <-got
		require.ErrorIs(t, a.Err, cause, "Lock(outer) whose ctx was cancelled")
		require.Zero(t, sent(), "scripts sent while waiting for an inner hold")
		waiting := testkit.Background(func() (context.Context, error) { return l.Lock(outer) })
		unlock(t, l, inner)
		again := testkit.Await(t, waiting, "re-entry after the inner Unlock")
		require.Equal(t, 2, holdCount(t, l, again), "hold count of the re-entry")
		unlock(t, l, again)
		unlock(t, l, outer)
	})
}
