package multilock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// lockerCalls are every method of a lock of this package (a Group, a MultiLock, a RedLock): owner
// is a ctx of an owner that holds nothing.
func lockerCalls(l interface {
	Locker
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}, owner context.Context, ran *bool) testkit.Calls {
	ctx := context.Background()
	calls := testkit.Calls{
		"Lock": func() error {
			// Not waited for: a wait would end with the deadline, not the refusal.
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := l.Lock(ctx)
			return err
		},
		"TryLock":             func() error { _, err := l.TryLock(ctx, 0); return err },
		"TryLock with a wait": func() error { _, err := l.TryLock(ctx, time.Minute); return err },
		"IsHeld":              func() error { _, err := l.IsHeld(owner); return err },
		"Do":                  func() error { return l.Do(ctx, func(context.Context) error { *ran = true; return nil }) },
	}
	if g, ok := l.(*Group); ok {
		calls["Unlock"] = func() error { return g.Unlock(owner) }
		calls["ForceUnlock"] = func() error { _, err := g.ForceUnlock(ctx); return err }
		calls["IsLocked"] = func() error { _, err := g.IsLocked(ctx); return err }
	}
	return calls
}

// TestGroupCollidingNames: on a group that holds anything but a group lock's hash (an application's
// string, hash or list, a lock's hash, a read-write lock's), every method of a Group refuses with
// redisync.ErrWrongType at once, and changes nothing: no field is written into the hash.
func TestGroupCollidingNames(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		for _, f := range testkit.ForeignsBut("group") {
			t.Run(f.Name, func(t *testing.T) {
				name := groupName("colliding")
				f.Write(t, rdb, name)
				before := tg.State(t, rdb, name)
				ran := false
				g := newGroup(t, c, name, []string{"1001", "1002"})
				testkit.RequireAll(t, redisync.ErrWrongType, lockerCalls(g, redisync.WithOwner(context.Background()), &ran))
				require.False(t, ran, "Do ran fn")
				require.Equal(t, before, tg.State(t, rdb, name), "the group's keys after every method")
			})
		}
	})
}

// TestGroupAndLockOnOneName: a Group and an rlock.Lock on one name never both hold it: whichever
// comes second is refused with redisync.ErrWrongType, and the first's hash is left as it is.
func TestGroupAndLockOnOneName(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		name := groupName("one-name")
		l, err := rlock.New(c, name)
		require.NoError(t, err)
		g := newGroup(t, c, name, []string{"1001"})

		held, err := l.Lock(context.Background())
		require.NoError(t, err)
		before := tg.State(t, rdb, name)
		_, err = g.TryLock(context.Background(), 0)
		require.ErrorIs(t, err, redisync.ErrWrongType, "a group lock on a held lock's name")
		require.Equal(t, before, tg.State(t, rdb, name), "the lock's hash")
		require.NoError(t, l.Unlock(held))

		held = lockGroup(t, g, context.Background())
		before = tg.State(t, rdb, name)
		_, err = l.TryLock(context.Background(), 0)
		require.ErrorIs(t, err, redisync.ErrWrongType, "a lock on a held group's name")
		require.Equal(t, before, tg.State(t, rdb, name), "the group's hash")
		require.NoError(t, g.Unlock(held))
	})
}

// TestCompositesCollidingNames: a MultiLock or RedLock one of whose locks is on a name that holds
// other data is refused with redisync.ErrWrongType, through that lock, and holds nothing.
func TestCompositesCollidingNames(t *testing.T) {
	servers := startN(t, 3)
	ls := locks(t, servers, []string{"free-a", "app-data", "free-b"})
	if _, err := servers[1].Do("HSET", "app-data", "user", "alice"); err != nil {
		t.Fatal(err)
	}
	m, err := New(ls...)
	require.NoError(t, err)
	r, err := NewRedLock(ls...)
	require.NoError(t, err)
	for what, l := range map[string]interface {
		Locker
		Do(ctx context.Context, fn func(ctx context.Context) error) error
	}{"multilock": m, "redlock": r} {
		// A RedLock fails too, though a majority is free: one server's name holds other data.
		ran := false
		testkit.RequireAll(t, redisync.ErrWrongType, lockerCalls(l, redisync.WithOwner(context.Background()), &ran))
		require.False(t, ran, "%s: Do ran fn", what)
	}
	requireNoKeys(t, servers[:1], "free-a")
	requireNoKeys(t, servers[2:], "free-b")
	out, err := servers[1].Do("HGETALL", "app-data")
	require.NoError(t, err)
	require.Equal(t, "user\nalice", out, "the application's hash")
}

// TestDoGivesBackOnPanic: a panic in Do's fn goes on to the caller after every value of a Group,
// and every lock of a MultiLock or RedLock, was given back, and the hold's ctx has ended.
func TestDoGivesBackOnPanic(t *testing.T) {
	servers := startN(t, 3)
	names := []string{"panic-a", "panic-b", "panic-c"}
	ls := locks(t, servers, names)
	m, err := New(ls...)
	require.NoError(t, err)
	r, err := NewRedLock(ls...)
	require.NoError(t, err)
	g := newGroup(t, connect(t, servers[0]), "panic-group", []string{"1001", "1002"})
	for what, l := range map[string]interface {
		Do(ctx context.Context, fn func(ctx context.Context) error) error
	}{"multilock": m, "redlock": r, "group lock": g} {
		var held context.Context
		boom := errors.New("boom")
		func() {
			defer func() { require.Equal(t, boom, recover(), "%s: the panic Do passed on", what) }()
			_ = l.Do(context.Background(), func(ctx context.Context) error {
				held = ctx
				panic(boom)
			})
			t.Fatalf("%s: Do returned", what)
		}()
		require.ErrorIs(t, context.Cause(held), redisync.ErrReleased, "%s: the hold's ctx after the panic", what)
		for i, s := range servers {
			requireNoKeys(t, []*redistest.Server{s}, names[i])
		}
		requireNoKeys(t, servers[:1], "panic-group")
	}
}

// TestAfterClose: once its Clients are closed, every method of a Group, a MultiLock and a RedLock
// returns redisync.ErrClosed.
func TestAfterClose(t *testing.T) {
	servers := startN(t, 3)
	var cs []*redisync.Client
	var ls []Locker
	for i, s := range servers {
		c := connect(t, s)
		l, err := rlock.New(c, []string{"closed-a", "closed-b", "closed-c"}[i])
		require.NoError(t, err)
		cs, ls = append(cs, c), append(ls, l)
	}
	m, err := New(ls...)
	require.NoError(t, err)
	r, err := NewRedLock(ls...)
	require.NoError(t, err)
	g := newGroup(t, cs[0], "closed-group", []string{"1001"})
	for _, c := range cs {
		require.NoError(t, c.Close())
	}
	for what, l := range map[string]interface {
		Locker
		Do(ctx context.Context, fn func(ctx context.Context) error) error
	}{"multilock": m, "redlock": r, "group lock": g} {
		ran := false
		testkit.RequireAll(t, redisync.ErrClosed, lockerCalls(l, redisync.WithOwner(context.Background()), &ran))
		require.False(t, ran, "%s: Do ran fn", what)
	}
}
