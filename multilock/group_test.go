package multilock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	holds "github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

// A Group is a Locker: a MultiLock or RedLock can take it.
var _ Locker = (*Group)(nil)

// groupSeq makes each test's group name unique on the shared servers.
var groupSeq atomic.Int64

func groupName(base string) string {
	return fmt.Sprintf("%s-%d-%d", base, time.Now().UnixNano()%1e9, groupSeq.Add(1))
}

func newGroup(t testing.TB, c *redisync.Client, group string, values []string, opts ...GroupOption) *Group {
	t.Helper()
	g, err := NewGroup(c, group, values, opts...)
	require.NoError(t, err)
	return g
}

func lockGroup(t testing.TB, g *Group, ctx context.Context) context.Context {
	t.Helper()
	held, err := g.Lock(ctx)
	require.NoError(t, err, "Lock of %v", g.fields)
	return held
}

// ownerOf returns the owner field that held's owner writes through c.
func ownerOf(t testing.TB, c *redisync.Client, held context.Context) string {
	t.Helper()
	id, ok := redisync.OwnerID(held)
	require.True(t, ok, "no owner in ctx")
	return c.ID() + ":" + strconv.FormatInt(id, 10)
}

// hash returns the group's hash as Redis holds it.
func hash(t testing.TB, rdb rueidis.Client, group string) map[string]string {
	t.Helper()
	m, err := rdb.Do(context.Background(), rdb.B().Hgetall().Key(group).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// field is a value's field name, for a value written with StringCodec.
func field(value string) string { return GroupField([]byte(value)) }

// requireHolds checks that owner holds each of values count times in the group, with an expiry
// ahead of the server's clock.
func requireHolds(t testing.TB, rdb rueidis.Client, group, owner string, count int, values ...string) {
	t.Helper()
	h := hash(t, rdb, group)
	now := serverMs(t, rdb, group)
	for _, v := range values {
		f := field(v)
		require.Equal(t, owner, h[f], "owner of %q in %s: %v", v, group, h)
		require.Equal(t, strconv.Itoa(count), h[f+":"+owner+":lock_count"], "count of %q in %s: %v", v, group, h)
		e, err := strconv.ParseInt(h[f+":"+owner+":expire_time"], 10, 64)
		require.NoError(t, err, "expire_time of %q in %s: %v", v, group, h)
		require.Greater(t, e, now, "expire_time of %q is behind the server's clock", v)
	}
}

// serverMs returns the clock of the server that holds key, in ms.
func serverMs(t testing.TB, rdb rueidis.Client, key string) int64 {
	t.Helper()
	// TIME has no key; a script with the key runs on its node.
	n, err := rdb.Do(context.Background(), rdb.B().Eval().Script("local t = redis.call('time') return t[1] * 1000 + math.floor(t[2] / 1000)").
		Numkeys(1).Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// requireGone checks that nothing of the group is left in Redis.
func requireGone(t testing.TB, rdb rueidis.Client, group string) {
	t.Helper()
	require.Empty(t, hash(t, rdb, group), "group %s left in Redis", group)
}

// parkedOn waits until a goroutine of c waits for a release in the group, its channel subscribed.
func parkedOn(t testing.TB, c *redisync.Client, group string) {
	t.Helper()
	n, channel := core.Of(c).Notifier(), "redisson_lock__channel:{"+group+"}"
	testkit.Eventually(t, 10*time.Second, func() error {
		if n.Waiting(channel) == 0 || !n.Subscribed(channel) {
			return errors.New("no waiter parked on " + channel)
		}
		return nil
	})
}

// slowRecheck makes a waiter's own tries rare: only a release message can wake it promptly.
var slowRecheck = redisync.WithRecheckInterval(time.Minute)

// Redisson's fields are Hash.hash128toBase64 of the encoded value. These were computed by Redisson's
// algorithm (its HighwayHash.java under its key, the two longs big-endian, Base64 less "=="),
// on the values' UTF-8 bytes, as StringCodec encodes them: lengths across the 32-byte packets and
// their remainders.
var redissonFields = map[string]string{
	"":                                  "t6rZwibGo2uy1OSmNVe8pg",
	"a":                                 "qwvAS12pR0CgRitaypEjUw",
	"Jack_001":                          "7pNoDdizVy2xY792MaFv+w",
	"Mary_002":                          "kIX2DFOX4IWct7G7K6tV9A",
	"student:001":                       "DqvoYruF5eyLDrILcprmBw",
	"order:1":                           "VohkkMHNiudvq57uOYf+SQ",
	"0123456789abcdef0123456789abcdef":  "08hr0B8iaf3PoSsWAS8sWA",
	"0123456789abcdef0123456789abcdef0": "bJFqmqUcs2MICdEOv9KOyw",
	"this value is longer than sixty-four bytes so it takes two packets and a rest": "R6DMZviCY7ErVevqNZnwUw",
	"größe": "TbTdvo+5kWNgp8M8i2crew",
	"🔒":     "gzDOuLRu54lnyTUhN5rwyQ",
}

func TestGroupFieldIsRedissons(t *testing.T) {
	for value, want := range redissonFields {
		require.Equal(t, want, GroupField([]byte(value)), "field of %q", value)
	}
}

func TestNewGroupChecksItsArguments(t *testing.T) {
	_, c := testkit.Mini(t)
	_, err := NewGroup(c, "g", nil)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	_, err = NewGroup(c, "", []string{"a"})
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	_, err = NewGroup(c, "g", []string{"a"}, WithLease(-time.Second))
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	g := newGroup(t, c, "g", []string{"b", "a", "b"})
	require.Equal(t, []string{field("b"), field("a")}, sortedLike(g.Fields(), field("b"), field("a")))
	require.Len(t, g.Fields(), 2, "a repeated value counts once")
	_, err = g.TryLock(context.Background(), -time.Second)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
	enc := newGroup(t, c, "g", []string{"17"}, WithEncoding(func(v string) []byte { return []byte(`"` + v + `"`) }))
	require.Equal(t, []string{GroupField([]byte(`"17"`))}, enc.Fields())
}

// sortedLike returns want when got holds the same fields (in sorted order), else got.
func sortedLike(got []string, want ...string) []string {
	if slices.Equal(got, slices.Sorted(slices.Values(want))) {
		return want
	}
	return got
}

// The hash holds Redisson's layout: per value its owner, the owner's expire_time (the server's clock
// plus the lease) and lock_count, and the hash's TTL is the lease. The last Unlock leaves nothing.
func TestGroupLayout(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		group := groupName("class_100")
		g := newGroup(t, c, group, []string{"Jack_001", "Mary_002"}, WithLease(30*time.Second))
		before := serverMs(t, rdb, group)
		held := lockGroup(t, g, context.Background())
		after := serverMs(t, rdb, group)
		owner := ownerOf(t, c, held)
		h := hash(t, rdb, group)
		require.Len(t, h, 6, "fields: %v", h)
		for _, v := range []string{"Jack_001", "Mary_002"} {
			f := redissonFields[v]
			require.Equal(t, owner, h[f])
			require.Equal(t, "1", h[f+":"+owner+":lock_count"])
			e, err := strconv.ParseInt(h[f+":"+owner+":expire_time"], 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, e, before+30000)
			require.LessOrEqual(t, e, after+30000)
		}
		ttl, err := rdb.Do(context.Background(), rdb.B().Pttl().Key(group).Build()).AsInt64()
		require.NoError(t, err)
		require.Greater(t, ttl, int64(25000))
		require.LessOrEqual(t, ttl, int64(30000))
		require.NoError(t, g.Unlock(held))
		require.ErrorIs(t, context.Cause(held), redisync.ErrReleased)
		requireGone(t, rdb, group)
	})
}

// Two groups that share a value exclude each other; value sets of the same group that do not meet
// do not. A set with one value held elsewhere takes none of its values.
func TestGroupExclusionPerValue(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("orders")
		c1, c2 := tg.Client(t), tg.Client(t)
		ab := newGroup(t, c1, group, []string{"a", "b"})
		bc := newGroup(t, c2, group, []string{"b", "c"})
		cd := newGroup(t, c2, group, []string{"c", "d"})
		held := lockGroup(t, ab, ctx)
		before := hash(t, rdb, group)

		_, err := bc.TryLock(ctx, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired)
		require.Equal(t, before, hash(t, rdb, group), "a failed try wrote into the group")
		locked, err := bc.IsLocked(ctx)
		require.NoError(t, err)
		require.True(t, locked, "IsLocked of a set whose value b is held")

		// The same owner's ctx does not help another Client's Group: owners are per Client.
		_, err = bc.TryLock(held, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired)

		other := lockGroup(t, cd, ctx) // disjoint from {a, b}
		requireHolds(t, rdb, group, ownerOf(t, c2, other), 1, "c", "d")
		requireHolds(t, rdb, group, ownerOf(t, c1, held), 1, "a", "b")
		require.NoError(t, ab.Unlock(held))
		_, err = bc.TryLock(ctx, 0) // c is now held by {c, d}
		require.ErrorIs(t, err, redisync.ErrNotAcquired)
		require.NoError(t, cd.Unlock(other))
		requireGone(t, rdb, group)

		h2, err := bc.TryLock(ctx, 0)
		require.NoError(t, err)
		require.NoError(t, bc.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// An owner enters its set again through the held ctx: every value's count goes up, and each Unlock
// takes one off. A NonReentrant group refuses, and changes nothing.
func TestGroupReentry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		group := groupName("reentry")
		values := []string{"x", "y", "z"}
		g := newGroup(t, c, group, values)
		outer := lockGroup(t, g, context.Background())
		owner := ownerOf(t, c, outer)
		inner := lockGroup(t, g, outer)
		requireHolds(t, rdb, group, owner, 2, values...)
		require.ErrorIs(t, g.Unlock(outer), redisync.ErrNotInnermost)
		require.NoError(t, g.Unlock(inner))
		requireHolds(t, rdb, group, owner, 1, values...)
		ok, err := g.IsHeld(outer)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, g.Unlock(outer))
		require.ErrorIs(t, g.Unlock(outer), redisync.ErrNotHeld)
		requireGone(t, rdb, group)

		strict := newGroup(t, c, group, values, NonReentrant())
		held := lockGroup(t, strict, context.Background())
		_, err = strict.Lock(held)
		require.ErrorIs(t, err, redisync.ErrAlreadyHeld)
		requireHolds(t, rdb, group, ownerOf(t, c, held), 1, values...)
		require.NoError(t, strict.Unlock(held))
		requireGone(t, rdb, group)
	})
}

// One owner may hold overlapping sets of one group: a shared value counts both holds, and stays held
// until both are released.
func TestGroupOverlappingHoldsOfOneOwner(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		group := groupName("overlap")
		ab := newGroup(t, c, group, []string{"a", "b"})
		bc := newGroup(t, c, group, []string{"b", "c"})
		ctx := redisync.WithOwner(context.Background()) // one owner, two holds: neither ctx from the other
		h1 := lockGroup(t, ab, ctx)
		owner := ownerOf(t, c, h1)
		h2 := lockGroup(t, bc, ctx)
		requireHolds(t, rdb, group, owner, 2, "b")
		requireHolds(t, rdb, group, owner, 1, "a", "c")
		require.NoError(t, ab.Unlock(h1))
		requireHolds(t, rdb, group, owner, 1, "b", "c")
		require.NotContains(t, hash(t, rdb, group), field("a"))
		ok, err := bc.IsHeld(h2)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, h2.Err(), "the other hold's ctx ended")
		require.NoError(t, bc.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// A waiter for a set is woken by the release of a value it needs, announced on Redisson's channel of
// the group: its own next try is a minute away, and so is the holder's lease.
func TestGroupWaiterWokenByRelease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		group := groupName("wake")
		c1, c2 := tg.Client(t, slowRecheck), tg.Client(t, slowRecheck)
		ab := newGroup(t, c1, group, []string{"a", "b"})
		bc := newGroup(t, c2, group, []string{"b", "c"})
		held := lockGroup(t, ab, context.Background())
		got := testkit.Background(func() (context.Context, error) { return bc.Lock(context.Background()) })
		parkedOn(t, c2, group)
		released := time.Now()
		require.NoError(t, ab.Unlock(held))
		h2 := testkit.Await(t, got, "waiter for {b, c}")
		t.Logf("the waiter acquired %v after the release", time.Since(released))
		requireHolds(t, rdb, group, ownerOf(t, c2, h2), 1, "b", "c")
		require.NoError(t, bc.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// TryLock gives up after its wait, holding nothing; a wait that a release ends in time acquires.
func TestGroupTryLockBounds(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("bounds")
		c1, c2 := tg.Client(t), tg.Client(t)
		ab := newGroup(t, c1, group, []string{"a", "b"})
		b := newGroup(t, c2, group, []string{"b"})
		held := lockGroup(t, ab, ctx)
		before := hash(t, rdb, group)
		start := time.Now()
		_, err := b.TryLock(ctx, 300*time.Millisecond)
		took := time.Since(start)
		require.ErrorIs(t, err, redisync.ErrNotAcquired)
		require.GreaterOrEqual(t, took, 300*time.Millisecond)
		require.Less(t, took, 300*time.Millisecond+send.Overtime+2*time.Second, "TryLock overran its wait")
		require.Equal(t, before, hash(t, rdb, group))

		got := testkit.Background(func() (context.Context, error) { return b.TryLock(ctx, 20*time.Second) })
		parkedOn(t, c2, group)
		require.NoError(t, ab.Unlock(held))
		h2 := testkit.Await(t, got, "TryLock with a wait")
		require.NoError(t, b.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// A fixed lease ends the hold: its ctx ends with ErrLost, a waiter takes the values over (the old
// holder's fields go), and the old holder's Unlock finds nothing, and leaves nothing.
func TestGroupLeaseExpiry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("lease")
		c1, c2 := tg.Client(t), tg.Client(t)
		short := newGroup(t, c1, group, []string{"a", "b"}, WithLease(time.Second))
		start := time.Now()
		held := lockGroup(t, short, ctx)
		dl, ok := held.Deadline()
		require.True(t, ok, "a fixed lease gives the ctx a deadline")
		require.WithinDuration(t, start.Add(time.Second-holds.Drift(time.Second)), dl, time.Since(start)+time.Millisecond)

		// Another holder of b keeps the hash alive past a's lease: a's lease ends by its expire_time.
		b := newGroup(t, c2, group, []string{"b", "c"})
		h2, err := b.TryLock(ctx, 20*time.Second)
		require.NoError(t, err)
		<-held.Done()
		require.ErrorIs(t, context.Cause(held), redisync.ErrLost)
		old := ownerOf(t, c1, held)
		for f := range hash(t, rdb, group) {
			require.NotContains(t, f, field("b")+":"+old, "the old holder's fields of b stayed")
		}
		require.ErrorIs(t, short.Unlock(held), redisync.ErrNotHeld)
		for f, v := range hash(t, rdb, group) {
			require.NotContains(t, f, old, "the old holder's Unlock left %s", f)
			require.NotEqual(t, old, v, "the old holder's Unlock left %s", f)
		}
		require.NoError(t, b.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// IsHeld: whether ctx's owner holds every value; IsLocked: whether anyone holds any.
func TestGroupIsHeldIsLocked(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("state")
		c1, c2 := tg.Client(t), tg.Client(t)
		ab := newGroup(t, c1, group, []string{"a", "b"})
		abc := newGroup(t, c1, group, []string{"a", "b", "c"})
		cd := newGroup(t, c2, group, []string{"c", "d"})
		for _, g := range []*Group{ab, abc, cd} {
			locked, err := g.IsLocked(ctx)
			require.NoError(t, err)
			require.False(t, locked)
		}
		held := lockGroup(t, ab, ctx)
		check := func(g *Group, ctx context.Context, want bool, what string) {
			t.Helper()
			ok, err := g.IsHeld(ctx)
			require.NoError(t, err)
			require.Equal(t, want, ok, what)
		}
		check(ab, held, true, "IsHeld by the holder")
		check(ab, ctx, false, "IsHeld without an owner")
		check(ab, redisync.WithOwner(ctx), false, "IsHeld by another owner")
		check(abc, held, false, "IsHeld of a wider set, c not held")
		check(cd, held, false, "IsHeld on another Client")
		for g, want := range map[*Group]bool{ab: true, abc: true, cd: false} {
			locked, err := g.IsLocked(ctx)
			require.NoError(t, err)
			require.Equal(t, want, locked, "IsLocked of %v", g.fields)
		}
		require.NoError(t, ab.Unlock(held))
		check(ab, held, false, "IsHeld after Unlock")
		locked, err := ab.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked)
		requireGone(t, rdb, group)
	})
}

// ForceUnlock frees the values whoever holds them: the holder on the same Client loses its hold at
// once, one elsewhere at its next renewal; a hold on other values of the group stays.
func TestGroupForceUnlock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("force")
		c1 := tg.Client(t, redisync.WithWatchdogTimeout(time.Second))
		c2 := tg.Client(t)
		ab := newGroup(t, c1, group, []string{"a", "b"})
		cd := newGroup(t, c1, group, []string{"c", "d"})
		h1 := lockGroup(t, ab, ctx)
		h2 := lockGroup(t, cd, ctx)

		// From another Client: c1 learns at its next renewal.
		was, err := newGroup(t, c2, group, []string{"b"}).ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, was)
		select {
		case <-h1.Done():
		case <-time.After(10 * time.Second): // a renewal period is a third of a second
			t.Fatal("the holder of {a, b} did not learn that b was forced free")
		}
		require.ErrorIs(t, context.Cause(h1), redisync.ErrLost)
		require.ErrorIs(t, ab.Unlock(h1), redisync.ErrNotHeld)
		require.NotContains(t, hash(t, rdb, group), field("a"), "the broken hold's Unlock left a")
		requireHolds(t, rdb, group, ownerOf(t, c1, h2), 1, "c", "d")

		// On the same Client: at once, and only the holds that share a value.
		h3 := lockGroup(t, ab, ctx)
		was, err = newGroup(t, c1, group, []string{"d", "e"}).ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, was)
		require.ErrorIs(t, context.Cause(h2), redisync.ErrLost, "the hold of {c, d} on the same Client")
		require.NoError(t, h3.Err(), "the hold of {a, b} shares no value with {d, e}")
		require.NotContains(t, hash(t, rdb, group), field("d"))
		require.ErrorIs(t, cd.Unlock(h2), redisync.ErrNotHeld)
		require.NoError(t, ab.Unlock(h3))
		requireGone(t, rdb, group)

		was, err = ab.ForceUnlock(ctx)
		require.NoError(t, err)
		require.False(t, was, "ForceUnlock of a free set")
	})
}

// The watchdog keeps a hold past several timeouts: each renewal moves every value's expire_time on.
func TestGroupWatchdogKeepsALongHold(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const timeout = time.Second
		rdb := tg.Redis(t)
		c := tg.Client(t, redisync.WithWatchdogTimeout(timeout))
		group := groupName("watchdog")
		values := []string{"a", "b", "c"}
		g := newGroup(t, c, group, values)
		other := newGroup(t, tg.Client(t), group, []string{"c"})
		held := lockGroup(t, g, context.Background())
		owner := ownerOf(t, c, held)
		first := hash(t, rdb, group)[field("a")+":"+owner+":expire_time"]
		for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
			testkit.AwaitRenewals(t, rdb, group, 1)
		}
		require.NoError(t, held.Err(), "hold ended while the watchdog should keep it")
		requireHolds(t, rdb, group, owner, 1, values...)
		h := hash(t, rdb, group)
		for _, v := range values {
			require.Greater(t, h[field(v)+":"+owner+":expire_time"], first, "expire_time of %s not renewed", v)
		}
		_, err := other.TryLock(context.Background(), 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "a value of a renewed hold was free")
		require.NoError(t, g.Unlock(held))
		require.Zero(t, testkit.Renewals(c))
		requireGone(t, rdb, group)
	})
}

// Workers on several Clients lock random overlapping sets of one group: no two holders of one value
// are ever inside at once, and nothing is left.
func TestGroupMutualExclusion(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		group := groupName("mutex")
		const clients, workers, rounds, nvalues = 3, 3, 15, 6
		var sections [nvalues]testkit.Section
		var counts [nvalues]int // written only inside the section of its value: -race sees overlaps
		ctx := timeout(t, 2*time.Minute)
		var wg sync.WaitGroup
		for ci := range clients {
			c := tg.Client(t)
			for w := range workers {
				rnd := rand.New(rand.NewPCG(uint64(ci), uint64(w)))
				wg.Go(func() {
					for range rounds {
						idx := rnd.Perm(nvalues)[:1+rnd.IntN(3)]
						values := make([]string, len(idx))
						for i, v := range idx {
							values[i] = "v" + strconv.Itoa(v)
						}
						g, err := NewGroup(c, group, values)
						if err != nil {
							t.Error(err)
							return
						}
						held, err := g.Lock(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						for _, v := range idx {
							sections[v].Enter()
						}
						for _, v := range idx {
							n := counts[v]
							time.Sleep(100 * time.Microsecond)
							counts[v] = n + 1
						}
						for _, v := range idx {
							sections[v].Leave()
						}
						if err := g.Unlock(held); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		total := 0
		for v := range sections {
			require.LessOrEqual(t, sections[v].Max(), int64(1), "value v%d had %d holders inside at once", v, sections[v].Max())
			require.Equal(t, int(sections[v].Entries()), counts[v], "value v%d lost updates", v)
			total += counts[v]
		}
		t.Logf("%d value entries", total)
		requireGone(t, rdb, group)
	})
}

// helpers shared with the Java tests

// keys returns the sorted keys of m.
func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// ownedBy returns the fields of the hash that name owner.
func ownedBy(h map[string]string, owner string) []string {
	var out []string
	for f, v := range h {
		if v == owner || strings.Contains(f, ":"+owner+":") {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
