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

// TestLeaseOfTheCall: LockFor and TryLockFor give one acquisition a lease of its own, whatever the
// lock's option (a fixed lease ending is TestLostHolds' "lease of the call ended"): 0 is the
// watchdog's on a lock whose option is a fixed lease, and a fixed one on a lock the watchdog keeps is
// the TTL in Redis and the ctx's deadline, and is not renewed. A re-entry with a shorter lease does
// not shorten what the outer hold was promised, nor does its release. Bad leases are refused.
func (s *Suite) TestLeaseOfTheCall() {
	s.need(s.Kind.Lease, "fixed lease")
	s.each(func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		before := tg.Keys(t)
		n := name(t)
		c := tg.Client(t)
		for _, lease := range []time.Duration{-time.Second, time.Microsecond} {
			_, err := s.newLock(t, c, n, Options{}).LockFor(ctx, lease)
			require.ErrorIs(t, err, redisync.ErrInvalidArgument, "LockFor with a lease of %v", lease)
			_, err = s.newLock(t, c, n, Options{}).TryLockFor(ctx, 0, lease)
			require.ErrorIs(t, err, redisync.ErrInvalidArgument, "TryLockFor with a lease of %v", lease)
		}
		require.False(t, isLocked(t, s.newLock(t, c, n, Options{})), "IsLocked after refused calls")

		// The watchdog's, on a lock whose option is a fixed lease.
		fixed := s.newLock(t, c, n, Options{Lease: time.Hour})
		held, err := fixed.TryLockFor(ctx, time.Second, 0)
		require.NoError(t, err, "TryLockFor with the watchdog's lease")
		_, has := held.Deadline()
		require.False(t, has, "a hold the watchdog keeps has a deadline")
		require.Equal(t, 1, testkit.Renewals(c), "renewals of a hold the watchdog keeps")
		unlock(t, fixed, held)

		// A fixed one, on a lock the watchdog keeps, and a re-entry with a shorter one.
		const lease = time.Hour
		l := s.newLock(t, c, n, Options{})
		start := time.Now()
		outer, err := l.LockFor(ctx, lease)
		require.NoError(t, err, "LockFor")
		dl, ok := outer.Deadline()
		require.True(t, ok, "the hold's ctx has no deadline")
		require.False(t, dl.Before(start.Add(lease-testkit.Drift(lease))) || dl.After(time.Now().Add(lease)),
			"hold ctx deadline %v after LockFor began, want %v", dl.Sub(start), lease-testkit.Drift(lease))
		require.Greater(t, ttl(t, l), lease-time.Minute, "TTL of a lease of %v", lease)
		require.Zero(t, testkit.Renewals(c), "renewals of a fixed lease")
		if s.Kind.Reentrant {
			inner, err := l.TryLockFor(outer, 0, time.Second)
			require.NoError(t, err, "TryLockFor through the held ctx")
			idl, ok := inner.Deadline()
			require.True(t, ok && idl.Before(dl), "the inner hold's deadline %v is not its own lease's", idl)
			require.Greater(t, ttl(t, l), lease-time.Minute, "TTL after a re-entry with a shorter lease")
			unlock(t, l, inner)
			require.Greater(t, ttl(t, l), lease-time.Minute, "TTL after the release of the re-entry")
			alive(t, "after the release of the re-entry", outer)
		}
		unlock(t, l, outer)

		// A waiter's lease, whether a release hands it the lock or it acquires with a try of its own.
		wc := tg.Client(t)
		waiter := s.newLock(t, wc, n, Options{})
		holder := s.rival(t, c, n)
		hheld := lock(t, holder, ctx)
		got := make(chan context.Context, 1)
		go func() {
			held, err := waiter.TryLockFor(ctx, 20*time.Second, lease)
			if err != nil {
				t.Errorf("TryLockFor of a waiter: %v", err)
			}
			got <- held
		}()
		testkit.Eventually(t, 10*time.Second, func() error {
			if !s.waits(wc) {
				return errors.New("the waiter does not wait yet")
			}
			return nil
		})
		start = time.Now()
		unlock(t, holder, hheld)
		held = <-got
		require.NotNil(t, held, "the waiter's hold")
		wdl, ok := held.Deadline()
		require.True(t, ok && wdl.After(start.Add(lease-time.Minute)), "the waiter's deadline %v after the release", wdl.Sub(start))
		require.Greater(t, ttl(t, l), lease-time.Minute, "TTL of the waiter's lease of %v", lease)
		unlock(t, waiter, held)
		s.clean(t, tg, before, scope{names: []string{n}, handedOver: true}, c, wc)
	})
}

// TestMixedLeases: an owner's holds with leases of their own keep what each was promised whatever
// keeps the others: a hold given an hour inside one the watchdog keeps is not cut back by the
// renewals, and, where holds may be released in any order, the release of the outer one leaves the
// inner one its hour.
func (s *Suite) TestMixedLeases() {
	s.need(s.Kind.Lease && s.Kind.Reentrant, "fixed lease and re-entry")
	s.each(func(t *testing.T, tg *testkit.Target) {
		// The watchdog renews every third of its timeout, and a round that fails loses the hold when
		// its lease may have ended: 6 s leaves a busy machine 2 s for each round.
		const timeout = 6 * time.Second
		before := tg.Keys(t)
		n := name(t)
		c := tg.Client(t, redisync.WithWatchdogTimeout(timeout))
		l := s.newLock(t, c, n, Options{})
		outer := lock(t, l, context.Background())
		acquired := time.Now()
		inner, err := l.LockFor(outer, time.Hour)
		require.NoError(t, err, "LockFor through the held ctx")
		// The outer hold lives past its timeout and a third only through at least two renewals (the
		// client reports it lost when none came in time), and they leave the inner hold's TTL alone.
		for time.Since(acquired) < timeout+timeout/3 {
			time.Sleep(50 * time.Millisecond)
			require.Greater(t, ttl(t, l), time.Hour-time.Minute, "TTL under renewals of the outer hold")
		}
		alive(t, "under renewals", outer, inner)
		if s.Kind.Shared {
			unlock(t, l, outer)
			alive(t, "after the release of the outer hold", inner)
			require.Greater(t, ttl(t, l), time.Hour-time.Minute, "TTL after the release of the outer hold")
			require.True(t, isHeld(t, l, inner), "IsHeld of the inner hold")
			unlock(t, l, inner)
		} else {
			unlock(t, l, inner)
			unlock(t, l, outer)
		}
		require.False(t, isLocked(t, l), "IsLocked after the last Unlock")
		s.clean(t, tg, before, scope{names: []string{n}}, c)
	})
}

// TestExtend: Extend lengthens the hold of ctx's owner in Redis and moves the deadline of ctx's fixed
// lease with it, never shortening either; it refuses an owner that does not hold the lock, a hold
// that was released, or whose lease ended, with ErrNotHeld, and then changes nothing. On a hold the
// watchdog keeps, it lengthens the TTL and the renewals go on.
func (s *Suite) TestExtend() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		before := tg.Keys(t)
		n := name(t)
		c := tg.Client(t)
		l := s.newLock(t, c, n, Options{})
		rival := s.rival(t, tg.Client(t), n)
		held := lock(t, l, ctx)
		require.ErrorIs(t, l.Extend(held, 0), redisync.ErrInvalidArgument, "Extend by 0")
		require.ErrorIs(t, l.Extend(ctx, time.Minute), redisync.ErrNotHeld, "Extend with a ctx without owner")
		require.ErrorIs(t, l.Extend(redisync.WithOwner(ctx), time.Minute), redisync.ErrNotHeld, "Extend by another owner")
		require.NoError(t, l.Extend(held, time.Hour), "Extend of a hold the watchdog keeps")
		require.Greater(t, ttl(t, l), time.Hour-time.Minute, "TTL after Extend")
		require.Equal(t, 1, testkit.Renewals(c), "renewals after Extend")
		_, has := held.Deadline()
		require.False(t, has, "a hold the watchdog keeps has a deadline after Extend")
		unlock(t, l, held)
		require.ErrorIs(t, l.Extend(held, time.Hour), redisync.ErrNotHeld, "Extend after Unlock")
		require.False(t, isLocked(t, l), "IsLocked after Extend of a released hold")

		if s.Kind.Lease {
			held, err := l.LockFor(ctx, 10*time.Second)
			require.NoError(t, err, "LockFor")
			first, _ := held.Deadline()
			start := time.Now()
			require.NoError(t, l.Extend(held, time.Hour), "Extend of a fixed lease")
			dl, ok := held.Deadline()
			require.True(t, ok && !dl.Before(start.Add(time.Hour-testkit.Drift(time.Hour))) && !dl.After(time.Now().Add(time.Hour)),
				"deadline %v after Extend by an hour", time.Until(dl))
			require.Greater(t, ttl(t, l), time.Hour-time.Minute, "TTL after Extend by an hour")
			require.NoError(t, l.Extend(held, time.Second), "Extend by less than is left")
			later, _ := held.Deadline()
			require.Equal(t, dl, later, "Extend by less than is left moved the deadline")
			require.Greater(t, ttl(t, l), time.Hour-time.Minute, "TTL after Extend by less than is left")
			require.True(t, dl.After(first), "the deadline did not move")
			refused(t, rival, "held past the lease it was taken with")
			alive(t, "after Extend", held)
			unlock(t, l, held)

			// A hold whose lease ended is not extended, even where the lock is held again.
			short, err := l.LockFor(ctx, 100*time.Millisecond)
			require.NoError(t, err, "LockFor")
			require.ErrorIs(t, ended(t, short, 20*time.Second, "a short lease"), redisync.ErrLost)
			require.ErrorIs(t, l.Extend(short, time.Hour), redisync.ErrNotHeld, "Extend of a hold whose lease ended")
			require.False(t, isLocked(t, l) && ttl(t, l) > time.Second, "a lease that ended was extended")
			_ = l.Unlock(short) // Redis may keep it a moment after its ctx ended (the drift allowance)
		}
		s.clean(t, tg, before, scope{names: []string{n}}, c)
	})
}

// TestIsHeldBy: IsHeldBy answers for the owner id it is given, as IsHeld does for ctx's.
func (s *Suite) TestIsHeldBy() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		l := s.newLock(t, tg.Client(t), name(t), Options{})
		held := lock(t, l, ctx)
		owner, ok := redisync.OwnerID(held)
		require.True(t, ok, "a hold's ctx carries no owner")
		other, _ := redisync.OwnerID(redisync.WithOwner(ctx))
		for _, c := range []struct {
			owner int64
			want  bool
		}{{owner, true}, {other, false}} {
			got, err := l.IsHeldBy(ctx, c.owner)
			require.NoError(t, err, "IsHeldBy")
			require.Equal(t, c.want, got, "IsHeldBy(%d), the holder being %d", c.owner, owner)
		}
		unlock(t, l, held)
		got, err := l.IsHeldBy(ctx, owner)
		require.NoError(t, err, "IsHeldBy")
		require.False(t, got, "IsHeldBy after Unlock")
	})
}

// TestHoldsTakenThroughOthers: a hold's ctx ends when the hold does, not when another hold it was
// taken through is released: a lock taken under another keeps its ctx when that one is released
// (hand over hand), as does an inner hold of a kind released in any order when the outer one goes.
// The end of the ctx the other hold was taken with still ends it, with its cause, and so does the
// loss of the other hold: the work was taken on under both.
func (s *Suite) TestHoldsTakenThroughOthers() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		n := name(t)
		a := s.newLock(t, c, n+":a", Options{})
		b := s.newLock(t, c, n+":b", Options{})

		parent, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		ha := lock(t, a, parent)
		hb := lock(t, b, context.WithValue(ha, testKey{}, "value"))
		require.Equal(t, "value", hb.Value(testKey{}), "a value of the ctx the hold was taken with")
		unlock(t, a, ha)
		alive(t, "after the release of the lock it was taken under", hb)
		require.True(t, isHeld(t, b, hb), "IsHeld after the release of the lock it was taken under")
		over := errors.New("request over")
		cancel(over)
		require.ErrorIs(t, ended(t, hb, 10*time.Second, "the hold's ctx after its parent ended"), over)
		unlock(t, b, hb)

		ha = lock(t, a, context.Background())
		hb = lock(t, b, ha)
		forced, err := a.ForceUnlock(context.Background())
		require.NoError(t, err, "ForceUnlock")
		require.True(t, forced, "ForceUnlock of a held lock")
		require.ErrorIs(t, ended(t, hb, 10*time.Second, "the hold's ctx after the loss of the lock it was taken under"), redisync.ErrLost)
		require.True(t, isHeld(t, b, hb), "IsHeld after the loss of the lock it was taken under")
		unlock(t, b, hb)

		if s.Kind.Shared && s.Kind.Reentrant {
			outer := lock(t, a, context.Background())
			inner := lock(t, a, outer)
			unlock(t, a, outer)
			alive(t, "the inner hold after the release of the outer one", inner)
			unlock(t, a, inner)
		}
		require.False(t, isLocked(t, a) || isLocked(t, b), "IsLocked after the last Unlock")
	})
}

type testKey struct{}
