package locksuite

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// TestNothingLeftBehind: a lock leaves nothing in Redis, on the Pub/Sub channels or in its Clients
// once it is free again: after lock, re-entry and unlock cycles (whose releases, on an exclusive
// kind, write no unlock latch, since the Client counts the owner's holds), after hand-overs between
// owners contending on several Clients (which the lock keeps apart: an exclusive holder is alone
// inside, and no update is lost), and after waiters that give up, also while a release hands the
// lock to them.
func (s *Suite) TestNothingLeftBehind() {
	s.Run("cycles", func() { s.each(s.cycles) })
	s.Run("hand-overs", func() { s.each(s.handOvers) })
	s.Run("give-ups", func() { s.each(s.giveUps) })
}

func (s *Suite) cycles(t *testing.T, tg *testkit.Target) {
	before := tg.Keys(t)
	c := tg.Client(t)
	sets := tg.Calls(t, "set")
	var names []string
	for i := range 4 {
		names = append(names, name(t)+":"+strconv.Itoa(i))
	}
	const n = 40
	for i := range n {
		l := s.newLock(t, c, names[i%len(names)], Options{})
		outer := lock(t, l, context.Background())
		if s.Kind.Reentrant {
			unlock(t, l, lock(t, l, outer))
		}
		unlock(t, l, outer)
	}
	if !s.Kind.Shared { // shared holds are released concurrently: the Client cannot count them
		require.Zero(t, tg.Calls(t, "set")-sets, "unlock latches written by %d releases of counted holds", n)
	}
	s.clean(t, tg, before, scope{names: names}, c)
}

func (s *Suite) handOvers(t *testing.T, tg *testkit.Target) {
	before := tg.Keys(t)
	n := name(t)
	const clients, perClient, rounds = 4, 2, 15
	var sec section
	var ctr counter
	var failed errs
	var wg sync.WaitGroup
	var cs []*redisync.Client
	for i := range clients {
		c := tg.Client(t)
		cs = append(cs, c)
		// On a shared kind every other Client is a rival: the hand-overs go between the two modes.
		exclusive := !s.Kind.Shared || i%2 == 0
		var l Lock
		if s.Kind.Shared && exclusive {
			l = s.rival(t, c, n)
		} else {
			l = s.newLock(t, c, n, Options{})
		}
		for range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					failed.add(l.Do(context.Background(), func(context.Context) error {
						sec.enter(exclusive)
						defer sec.leave(exclusive)
						if exclusive {
							ctr.incr()
						}
						return nil
					}))
				}
			}()
		}
	}
	wg.Wait()
	require.NoError(t, failed.err())
	require.Zero(t, sec.bad.Load(), "entries that overlapped an exclusive holder")
	require.EqualValues(t, clients*perClient*rounds, sec.entries.Load(), "entries")
	if !s.Kind.Shared {
		require.EqualValues(t, 1, sec.maxExclusive.Load(), "owners inside at once")
		require.Equal(t, clients*perClient*rounds, ctr.value(), "updates made inside the section")
	}
	s.clean(t, tg, before, scope{names: []string{n}, handedOver: true}, cs...)
}

func (s *Suite) giveUps(t *testing.T, tg *testkit.Target) {
	before := tg.Keys(t)
	n := name(t)
	hc := tg.Client(t)
	holder := s.rival(t, hc, n)
	held := lock(t, holder, context.Background())
	const bound = 300 * time.Millisecond
	var cs []*redisync.Client
	waiter := func() Lock {
		c := tg.Client(t)
		cs = append(cs, c)
		return s.newLock(t, c, n, Options{})
	}
	tried, locked, cancelled := waiter(), waiter(), waiter()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("gave up")
	gaveUp := []*call{
		{what: "TryLock", want: redisync.ErrNotAcquired, run: func() error {
			_, err := tried.TryLock(context.Background(), bound)
			return err
		}},
		{what: "Lock with a deadline", want: context.DeadlineExceeded, run: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			_, err := locked.Lock(ctx)
			return err
		}},
		{what: "Lock whose ctx is cancelled", want: cause, run: func() error {
			_, err := cancelled.Lock(ctx)
			return err
		}},
	}
	for _, c := range gaveUp {
		c.from, c.bound = time.Now(), 10*time.Second
		c.start()
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if !s.waits(cs[2]) {
			return errors.New("the waiter to cancel does not wait yet")
		}
		return nil
	})
	cancel(cause)
	for _, c := range gaveUp {
		c.check(t, "the lock held")
	}
	unlock(t, holder, held)
	s.clean(t, tg, before, scope{names: []string{n}}, append(cs, hc)...)

	// A release that hands the lock to a waiter just as its bound ends: whichever comes first, the
	// waiter holds and unlocks, or gives the lock back.
	for i := range 6 {
		held := lock(t, holder, context.Background())
		got := testkit.Background(func() (context.Context, error) { return tried.TryLock(context.Background(), bound) })
		// The release is timed on purpose around the waiter's bound, from before it to after.
		time.Sleep(bound - 50*time.Millisecond + time.Duration(i)*20*time.Millisecond)
		unlock(t, holder, held)
		select {
		case a := <-got:
			if a.Err == nil {
				unlock(t, tried, a.Ctx)
			} else {
				require.ErrorIs(t, a.Err, redisync.ErrNotAcquired, "a waiter whose bound ended at the release")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter has not returned within 10s")
		}
	}
	s.clean(t, tg, before, scope{names: []string{n}, handedOver: true}, append(cs, hc)...)
}
