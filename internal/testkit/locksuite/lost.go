package locksuite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// watchdog is the watchdog timeout of the lost-hold cases: a renewal every 300 ms finds a hold
// gone.
const watchdog = 900 * time.Millisecond

// TestLostHolds: a hold that ends without its Unlock (its keys deleted, the lock forced open here
// or from another Client, its fixed lease run out) ends its ctx, and those of the holds taken
// inside it, with ErrLost as cause, promptly: at once when forced on the holder's Client, at the
// next renewal when found gone, before another owner can acquire when the lease runs out. Unlock
// then returns ErrNotHeld, and nothing is left behind.
func (s *Suite) TestLostHolds() {
	s.Run("keys deleted", func() { s.each(s.keysDeleted) })
	s.Run("forced here", func() { s.each(func(t *testing.T, tg *testkit.Target) { s.forced(t, tg, true) }) })
	s.Run("forced elsewhere", func() { s.each(func(t *testing.T, tg *testkit.Target) { s.forced(t, tg, false) }) })
	s.Run("lease ended", func() {
		s.need(s.Kind.Lease, "fixed lease")
		s.each(func(t *testing.T, tg *testkit.Target) { s.leaseEnded(t, tg, false) })
	})
	s.Run("lease of the call ended", func() {
		s.need(s.Kind.Lease, "fixed lease")
		s.each(func(t *testing.T, tg *testkit.Target) { s.leaseEnded(t, tg, true) })
	})
}

// holds takes a hold of l, and one inside it if the kind re-enters.
func (s *Suite) holds(t *testing.T, l Lock) []context.Context {
	held := []context.Context{lock(t, l, context.Background())}
	if s.Kind.Reentrant {
		held = append(held, lock(t, l, held[0]))
	}
	return held
}

// lost checks that every hold ended with ErrLost within d, and that Unlock then finds nothing.
func lost(t *testing.T, l Lock, d time.Duration, held ...context.Context) {
	t.Helper()
	for i := len(held) - 1; i >= 0; i-- {
		require.ErrorIs(t, ended(t, held[i], d, "lost hold"), redisync.ErrLost, "cause of lost hold %d of %d", i+1, len(held))
	}
	for i := len(held) - 1; i >= 0; i-- {
		require.ErrorIs(t, l.Unlock(held[i]), redisync.ErrNotHeld, "Unlock of lost hold %d of %d", i+1, len(held))
	}
}

func (s *Suite) keysDeleted(t *testing.T, tg *testkit.Target) {
	before := tg.Keys(t)
	n := name(t)
	c := tg.Client(t, redisync.WithWatchdogTimeout(watchdog))
	l := s.newLock(t, c, n, Options{})
	held := s.holds(t, l)
	keys := tg.NewKeys(t, before)
	require.NotEmpty(t, keys, "a held lock has no key in Redis")
	rdb := tg.Redis(t)
	for _, k := range keys {
		testkit.Do(t, rdb, "DEL", k)
	}
	lost(t, l, watchdog+testkit.Margin, held...)
	require.False(t, isLocked(t, l), "IsLocked once its keys are gone")
	s.clean(t, tg, before, scope{names: []string{n}}, c)
}

func (s *Suite) forced(t *testing.T, tg *testkit.Target, here bool) {
	before := tg.Keys(t)
	n := name(t)
	hc := tg.Client(t, redisync.WithWatchdogTimeout(watchdog))
	l := s.newLock(t, hc, n, Options{})
	held := s.holds(t, l)
	fc, within := hc, time.Duration(0)
	if !here {
		fc, within = tg.Client(t), watchdog+testkit.Margin
	}
	force := s.newLock(t, fc, n, Options{})
	ok, err := force.ForceUnlock(context.Background())
	require.NoError(t, err, "ForceUnlock")
	require.True(t, ok, "ForceUnlock of a held lock reports it free")
	if here {
		for i, h := range held {
			require.ErrorIs(t, context.Cause(h), redisync.ErrLost, "hold %d on the forcing Client once ForceUnlock returned", i+1)
		}
	}
	lost(t, l, max(within, time.Millisecond), held...)
	require.False(t, isLocked(t, l), "IsLocked after ForceUnlock")
	ok, err = force.ForceUnlock(context.Background())
	require.NoError(t, err, "ForceUnlock of a free lock")
	require.False(t, ok, "ForceUnlock of a free lock reports it held")
	s.clean(t, tg, before, scope{names: []string{n}}, hc, fc)
}

// leaseEnded: a fixed lease, given by the lock's option or, perCall, by LockFor on a lock whose own
// is the watchdog's.
func (s *Suite) leaseEnded(t *testing.T, tg *testkit.Target, perCall bool) {
	before := tg.Keys(t)
	n := name(t)
	const lease = 500 * time.Millisecond
	c := tg.Client(t)
	l := s.newLock(t, c, n, Options{Lease: lease})
	if perCall {
		l = s.newLock(t, c, n, Options{})
	}
	rc := tg.Client(t)
	rival := s.rival(t, rc, n)
	start := time.Now()
	var held context.Context
	if perCall {
		var err error
		held, err = l.LockFor(context.Background(), lease)
		require.NoError(t, err, "LockFor")
	} else {
		held = lock(t, l, context.Background())
	}
	end := time.Now()
	// The ctx ends at the lease's end less the drift allowance, counted from the acquiring command.
	valid := lease - testkit.Drift(lease)
	dl, ok := held.Deadline()
	require.True(t, ok, "the hold's ctx has no deadline")
	require.False(t, dl.Before(start.Add(valid)) || dl.After(end.Add(valid)),
		"hold ctx deadline %v after Lock began, want %v after the acquiring command", dl.Sub(start), valid)
	// A busy machine may ask after the lease: the hold's own deadline has passed then.
	if d := ttl(t, l); d <= 0 && !time.Now().After(dl) || d > lease {
		t.Fatalf("TTL %v, want in (0, %v]", d, lease)
	}
	require.Zero(t, testkit.Renewals(c), "renewals of a fixed lease")
	next, err := rival.TryLock(context.Background(), 20*time.Second)
	require.NoError(t, err, "another owner after the lease ended")
	// The deadline, not Err: a loaded machine may run the ctx's timer late.
	require.True(t, time.Now().After(dl), "another owner acquired %v before the old holder's deadline", time.Until(dl))
	lost(t, l, time.Millisecond, held)
	unlock(t, rival, next)
	require.False(t, isLocked(t, l), "IsLocked after the last Unlock")
	s.clean(t, tg, before, scope{names: []string{n}}, c, rc)
}

// TestWatchdog: without a fixed lease the Client's watchdog renews the hold past its first lease,
// the hold's ctx lives on, and the lock's TTL stays within the watchdog timeout; Unlock stops the
// renewals, and a renewal in flight at the Unlock does not bring the lock back.
func (s *Suite) TestWatchdog() {
	s.each(func(t *testing.T, tg *testkit.Target) {
		const timeout = time.Second
		before := tg.Keys(t)
		c := tg.Client(t, redisync.WithWatchdogTimeout(timeout))
		n := name(t)
		l := s.newLock(t, c, n, Options{})
		held := lock(t, l, context.Background())
		acquired := time.Now()
		// Past the end of the first lease, which the Client counts from before Lock returned.
		awaitRenewals(t, l, 2)
		for time.Since(acquired) < timeout {
			awaitRenewals(t, l, 1)
		}
		alive(t, "under the watchdog", held)
		if d := ttl(t, l); d <= 0 || d > timeout {
			t.Fatalf("TTL after renewals %v, want in (0, %v]", d, timeout)
		}
		unlock(t, l, held)
		require.Zero(t, testkit.Renewals(c), "renewals after Unlock")
		// A renewal round lasts a third of the timeout at most.
		for end := time.Now().Add(timeout / 2); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			require.False(t, isLocked(t, l), "a renewal brought the lock back after Unlock")
			require.Empty(t, tg.NewKeys(t, before), "a renewal brought keys back after Unlock")
		}
		s.clean(t, tg, before, scope{names: []string{n}}, c)
	})
}

// awaitRenewals waits until the lock's TTL has been pushed later n times: a TTL that rises between
// two reads can only come from a renewal, since time only lowers it. Renewals that fall between two
// reads count as one, which only makes the wait longer.
func awaitRenewals(t *testing.T, l Lock, n int) {
	t.Helper()
	seen := 0
	read := func() time.Duration {
		d := ttl(t, l)
		require.Positive(t, d, "TTL after %d of %d renewals: the lock is free or has no expiry", seen, n)
		return d
	}
	last := read()
	testkit.Eventually(t, 30*time.Second, func() error {
		d := read()
		if d > last {
			seen++
		}
		last = d
		if seen < n {
			return fmt.Errorf("renewed %d times, want %d", seen, n)
		}
		return nil
	})
}
