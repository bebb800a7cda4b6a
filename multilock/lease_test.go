package multilock

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// pttl returns key's PTTL on s.
func pttl(t *testing.T, s *redistest.Server, key string) time.Duration {
	t.Helper()
	out, err := s.Do("PTTL", key)
	require.NoError(t, err)
	ms, err := strconv.ParseInt(out, 10, 64)
	require.NoError(t, err)
	return time.Duration(ms) * time.Millisecond
}

// LockFor and TryLockFor give every sub-lock the lease of the call, whatever the sub-locks' own: a
// fixed one is each sub-lock's TTL and bounds the hold's ctx, 0 is the watchdog's on sub-locks whose
// option is a fixed lease. A negative lease is refused, and a MultiLock taken under another lock
// keeps its ctx when that lock is released.
func TestCompositeLeaseOfTheCall(t *testing.T) {
	servers := startN(t, 3)
	ctx := context.Background()
	const lease = time.Hour
	for _, tc := range []struct {
		what string
		l    Locker
	}{
		{"MultiLock", newMulti(t, locks(t, servers, names3)...)},
		{"RedLock", newRed(t, locks(t, servers, same("rl-lease", 3)))},
	} {
		_, err := tc.l.LockFor(ctx, -time.Second)
		require.ErrorIs(t, err, redisync.ErrInvalidArgument, "%s: LockFor with a negative lease", tc.what)
		start := time.Now()
		held, err := tc.l.TryLockFor(ctx, 10*time.Second, lease)
		require.NoError(t, err, "%s: TryLockFor", tc.what)
		dl, ok := held.Deadline()
		require.True(t, ok && dl.After(start.Add(lease-time.Minute)) && !dl.After(time.Now().Add(lease)),
			"%s: deadline %v after TryLockFor began, want about %v", tc.what, dl.Sub(start), lease)
		for i, s := range servers {
			key := names3[i]
			if tc.what == "RedLock" {
				key = "rl-lease"
			}
			if d := pttl(t, s, key); d > 0 { // a RedLock may have returned with a majority
				require.Greater(t, d, lease-time.Minute, "%s: TTL of sub-lock %d", tc.what, i)
			}
		}
		require.NoError(t, tc.l.Unlock(held), "%s: Unlock", tc.what)
	}

	// The watchdog's, on sub-locks whose option is a fixed lease.
	m := newMulti(t, locks(t, servers, names3, rlock.WithLease(lease))...)
	held, err := m.LockFor(ctx, 0)
	require.NoError(t, err, "LockFor(0)")
	_, ok := held.Deadline()
	require.False(t, ok, "a MultiLock kept by the watchdogs has a deadline")
	require.LessOrEqual(t, pttl(t, servers[0], names3[0]), time.Second, "TTL under the watchdog (1 s)")

	// Taken under another lock, whose release does not end it.
	outer, err := rlock.New(connect(t, servers[0]), "ml-outer")
	require.NoError(t, err)
	parent, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	oheld, err := outer.Lock(parent)
	require.NoError(t, err)
	require.NoError(t, m.Unlock(held))
	held, err = m.Lock(oheld)
	require.NoError(t, err, "Lock under another lock")
	require.NoError(t, outer.Unlock(oheld))
	require.NoError(t, context.Cause(held), "the MultiLock's ctx after the release of the lock it was taken under")
	over := errors.New("request over")
	cancel(over)
	<-held.Done()
	require.ErrorIs(t, context.Cause(held), over, "the MultiLock's ctx after its parent ended")
	require.NoError(t, m.Unlock(held))
	for i, s := range servers {
		require.False(t, exists(t, s, names3[i]), "sub-lock %d after Unlock", i)
	}
}

// IsHeldBy asks every sub-lock about the owner id given; IsLocked says whether a Lock would have to
// wait (any sub-lock of a MultiLock held, a majority of a RedLock's); ForceUnlock frees every
// sub-lock and ends the holds of this Client.
func TestCompositeQueriesAndForceUnlock(t *testing.T) {
	servers := startN(t, 3)
	ctx := context.Background()
	multi := locks(t, servers, names3)
	red := locks(t, servers, same("rl-queries", 3))
	for _, tc := range []struct {
		what string
		l    Locker
		subs []Locker
		need int // sub-locks held elsewhere that make it locked
	}{
		{"MultiLock", newMulti(t, multi...), multi, 1},
		{"RedLock", newRed(t, red), red, 2},
	} {
		locked := func(want bool, when string) {
			t.Helper()
			got, err := tc.l.IsLocked(ctx)
			require.NoError(t, err, "%s: IsLocked %s", tc.what, when)
			require.Equal(t, want, got, "%s: IsLocked %s", tc.what, when)
		}
		locked(false, "when free")
		var others []context.Context
		for i := range tc.need {
			h, err := tc.subs[i].Lock(ctx)
			require.NoError(t, err)
			others = append(others, h)
			locked(i+1 == tc.need, "with "+strconv.Itoa(i+1)+" sub-locks held elsewhere")
		}
		for i, h := range others {
			require.NoError(t, tc.subs[i].Unlock(h))
		}

		held, err := tc.l.Lock(ctx)
		require.NoError(t, err, "%s: Lock", tc.what)
		owner, _ := redisync.OwnerID(held)
		other, _ := redisync.OwnerID(redisync.WithOwner(ctx))
		for _, o := range []struct {
			id   int64
			want bool
		}{{owner, true}, {other, false}} {
			got, err := tc.l.IsHeldBy(ctx, o.id)
			require.NoError(t, err, "%s: IsHeldBy", tc.what)
			require.Equal(t, o.want, got, "%s: IsHeldBy(%d), the holder being %d", tc.what, o.id, owner)
		}
		locked(true, "when held")
		forced, err := tc.l.ForceUnlock(ctx)
		require.NoError(t, err, "%s: ForceUnlock", tc.what)
		require.True(t, forced, "%s: ForceUnlock of a held lock", tc.what)
		<-held.Done()
		require.ErrorIs(t, context.Cause(held), redisync.ErrLost, "%s: the hold's ctx after ForceUnlock", tc.what)
		locked(false, "after ForceUnlock")
		require.ErrorIs(t, tc.l.Unlock(held), redisync.ErrNotHeld, "%s: Unlock after ForceUnlock", tc.what)
		forced, err = tc.l.ForceUnlock(ctx)
		require.NoError(t, err)
		require.False(t, forced, "%s: ForceUnlock of a free lock", tc.what)
	}
}

// A Group's hold takes the lease of the call, Extend lengthens every value of it, and IsHeldBy asks
// for an owner id.
func TestGroupLeaseExtendIsHeldBy(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		c := tg.Client(t)
		rdb := tg.Redis(t)
		name := groupName("group-lease")
		g := newGroup(t, c, name, []string{"a", "b"})
		_, err := g.TryLockFor(ctx, 0, -time.Second)
		require.ErrorIs(t, err, redisync.ErrInvalidArgument, "TryLockFor with a negative lease")
		start := time.Now()
		held, err := g.LockFor(ctx, 10*time.Second)
		require.NoError(t, err, "LockFor")
		dl, ok := held.Deadline()
		require.True(t, ok && dl.Before(start.Add(10*time.Second)), "deadline of a 10 s lease: %v", time.Until(dl))
		owner := ownerOf(t, c, held)
		expiry := func() []int64 {
			h := hash(t, rdb, name)
			var out []int64
			for _, f := range g.Fields() {
				e, err := strconv.ParseInt(h[f+":"+owner+":expire_time"], 10, 64)
				require.NoError(t, err, "expire_time of %s", f)
				out = append(out, e)
			}
			return out
		}
		before := expiry()
		require.NoError(t, g.Extend(held, time.Hour), "Extend")
		for i, e := range expiry() {
			require.Greater(t, e, before[i]+int64((time.Hour-time.Minute)/time.Millisecond)-10_000, "expire_time of value %d after Extend", i)
		}
		ndl, _ := held.Deadline()
		require.True(t, ndl.After(dl.Add(50*time.Minute)), "deadline after Extend by an hour: %v", time.Until(ndl))
		id, _ := redisync.OwnerID(held)
		for _, o := range []struct {
			id   int64
			want bool
		}{{id, true}, {id + 1_000_000, false}} {
			got, err := g.IsHeldBy(ctx, o.id)
			require.NoError(t, err)
			require.Equal(t, o.want, got, "IsHeldBy(%d)", o.id)
		}
		require.ErrorIs(t, g.Extend(redisync.WithOwner(ctx), time.Hour), redisync.ErrNotHeld, "Extend by another owner")
		require.NoError(t, g.Unlock(held))
		require.ErrorIs(t, g.Extend(held, time.Hour), redisync.ErrNotHeld, "Extend after Unlock")
		locked, err := g.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked, "IsLocked after Unlock")
	})
}
