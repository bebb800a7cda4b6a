package locksuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// TestCollidingNames: on a name that holds data of another type (an application's string, hash,
// list...) or another primitive's layout, every method refuses with redisync.ErrWrongType, saying
// what it found and never a script's internals, at once (Lock does not wait), and changes nothing
// under the name or beside it.
func (s *Suite) TestCollidingNames() {
	require.NotEmpty(s.T(), s.Kind.Layout, "the kind names its layout")
	s.each(func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		for _, f := range testkit.ForeignsBut(s.Kind.Layout) {
			t.Run(f.Name, func(t *testing.T) {
				n := name(t)
				f.Write(t, rdb, n)
				before := tg.State(t, rdb, n)
				l := s.newLock(t, c, n, Options{})
				owner := redisync.WithOwner(context.Background())
				ran := false
				for what, call := range map[string]func() error{
					"Lock": func() error {
						// Not waited for: a wait would end with the deadline, not ErrWrongType.
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						_, err := l.Lock(ctx)
						return err
					},
					"TryLock":             func() error { _, err := l.TryLock(context.Background(), 0); return err },
					"TryLock with a wait": func() error { _, err := l.TryLock(context.Background(), time.Minute); return err },
					"Unlock":              func() error { return l.Unlock(owner) },
					"ForceUnlock":         func() error { _, err := l.ForceUnlock(context.Background()); return err },
					"IsLocked":            func() error { _, err := l.IsLocked(context.Background()); return err },
					"IsHeld":              func() error { _, err := l.IsHeld(owner); return err },
					"HoldCount":           func() error { _, err := l.HoldCount(owner); return err },
					"TTL":                 func() error { _, err := l.TTL(context.Background()); return err },
					"Do": func() error {
						return l.Do(context.Background(), func(context.Context) error { ran = true; return nil })
					},
				} {
					err := call()
					require.ErrorIs(t, err, redisync.ErrWrongType, "%s on a name that holds a %s", what, f.Name)
					testkit.NoInternals(t, what, err)
				}
				for what, query := range s.ownQueries(l) {
					err := query(context.Background())
					require.ErrorIs(t, err, redisync.ErrWrongType, "%s on a name that holds a %s", what, f.Name)
					testkit.NoInternals(t, what, err)
				}
				require.False(t, ran, "Do ran fn")
				require.Equal(t, before, tg.State(t, rdb, n), "the name's keys after every method")
				require.Equal(t, 0, testkit.Waiters(c), "waiters left")
			})
		}
	})
}

// TestDoGivesBackOnPanic: a panic in Do's fn goes on to the caller, unrecovered, after the hold was
// given back: the lock is free at once, and the hold's ctx has ended as a released one's does.
func (s *Suite) TestDoGivesBackOnPanic() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		n := name(t)
		l := s.newLock(t, c, n, Options{})
		var held context.Context
		boom := errors.New("boom")
		func() {
			defer func() { require.Equal(t, boom, recover(), "the panic Do passed on") }()
			_ = l.Do(context.Background(), func(ctx context.Context) error {
				held = ctx
				panic(boom)
			})
			t.Fatal("Do returned")
		}()
		require.ErrorIs(t, context.Cause(held), redisync.ErrReleased, "the hold's ctx after the panic")
		require.False(t, isLocked(t, l), "the lock is held after Do's fn panicked")
		r := s.rival(t, tg.Client(t), n)
		unlock(t, r, lock(t, r, context.Background()))
	})
}

// TestAfterClose: once its Client is closed, every method of a lock returns redisync.ErrClosed,
// whatever Redis would say: the hold taken before included.
func (s *Suite) TestAfterClose() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		n := name(t)
		l := s.newLock(t, c, n, Options{})
		held := lock(t, l, context.Background())
		require.NoError(t, c.Close())
		ran := false
		for what, call := range map[string]func() error{
			"Lock":        func() error { _, err := l.Lock(context.Background()); return err },
			"TryLock":     func() error { _, err := l.TryLock(context.Background(), time.Second); return err },
			"Unlock":      func() error { return l.Unlock(held) },
			"ForceUnlock": func() error { _, err := l.ForceUnlock(context.Background()); return err },
			"IsLocked":    func() error { _, err := l.IsLocked(context.Background()); return err },
			"IsHeld":      func() error { _, err := l.IsHeld(held); return err },
			"HoldCount":   func() error { _, err := l.HoldCount(held); return err },
			"TTL":         func() error { _, err := l.TTL(context.Background()); return err },
			"Do": func() error {
				return l.Do(context.Background(), func(context.Context) error { ran = true; return nil })
			},
		} {
			require.ErrorIs(t, call(), redisync.ErrClosed, "%s after Close", what)
		}
		for what, query := range s.ownQueries(l) {
			require.ErrorIs(t, query(context.Background()), redisync.ErrClosed, "%s after Close", what)
		}
		require.False(t, ran, "Do ran fn after Close")
		require.ErrorIs(t, context.Cause(held), redisync.ErrClosed, "the hold's ctx after Close")
		// The hold, which Close left to its lease, is freed for the next test.
		_, err := s.newLock(t, tg.Client(t), n, Options{}).ForceUnlock(context.Background())
		require.NoError(t, err)
	})
}

// TestNoKeyAfterTheLastRelease: once nobody waits, the last release leaves no key beside the lock,
// also after a hand-over: neither the mark of the grant it came from nor a record of its waiter's
// Client (only the kind's kept keys, such as a fencing counter).
func (s *Suite) TestNoKeyAfterTheLastRelease() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		before := tg.Keys(t)
		n := name(t)
		holder := s.rival(t, tg.Client(t), n)
		held := lock(t, holder, context.Background())
		wc := tg.Client(t)
		waiter := s.newLock(t, wc, n, Options{})
		got := testkit.Background(func() (context.Context, error) { return waiter.Lock(context.Background()) })
		testkit.Eventually(t, 10*time.Second, func() error {
			if !s.waits(wc) {
				return errors.New("the waiter does not wait yet")
			}
			return nil
		})
		unlock(t, holder, held)
		a := <-got
		require.NoError(t, a.Err, "the waiter's Lock")
		// Nobody listens any more (the waiter's channels have stopped lingering): nobody waits.
		testkit.Eventually(t, 10*time.Second, func() error {
			for _, srv := range tg.Servers {
				for _, cmd := range [][]string{{"PUBSUB", "CHANNELS"}, {"PUBSUB", "SHARDCHANNELS"}} {
					out, err := srv.Do(cmd...)
					if err != nil {
						return err
					}
					if strings.Contains(out, n) {
						return fmt.Errorf("channels still subscribed: %q", out)
					}
				}
			}
			return nil
		})
		unlock(t, waiter, a.Ctx)
		kept := s.kept(n, Options{})
		testkit.Eventually(t, 5*time.Second, func() error {
			var left []string
			for _, k := range tg.NewKeys(t, before) {
				if strings.Contains(k, n) && !slices.Contains(kept, k) {
					left = append(left, k)
				}
			}
			if len(left) > 0 {
				return fmt.Errorf("keys left after the last release: %q", left)
			}
			return nil
		})
	})
}

// ownQueries returns the kind's own queries of l (Kind.Queries), none when it has none.
func (s *Suite) ownQueries(l Lock) map[string]func(ctx context.Context) error {
	if s.Kind.Queries == nil {
		return nil
	}
	return s.Kind.Queries(l)
}
