package locksuite

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

// TestDeadServer: on a server that was killed, that stopped (SIGSTOP), or that holds every write
// (CLIENT PAUSE WRITE), every call returns an error within the bound the library promises, and none
// acquires: a parked waiter, a TryLock and a Lock with a deadline at their bound (plus Overtime for
// what was sent at it); a query within RetryBound; a Lock without a deadline and an Unlock within
// RetryBound when the server is gone, and within StallBound plus RetryBound when it stalls. Once
// the server is back (empty after a kill), the holds are released and nothing is left behind. A
// waiter whose channels cannot be subscribed learns that the server died at its next recheck.
//
// A short stall ends once the bounded calls have returned, so that what they send when they give up
// (a waiter's leave, bounded by RetryBound) still reaches the server; calls that wait out a stall
// longer than that have a case of their own. Each case has a server of its own and spends its time
// waiting out bounds, so they run in parallel, and beside the cases on the shared servers.
func (d *DeadServerSuite) TestDeadServer() {
	s := d.s
	for _, c := range []struct {
		fault string
		run   func(*testing.T, string)
	}{
		{"kill", s.deadServer},
		{"SIGSTOP", s.deadServer},
		{"CLIENT PAUSE WRITE", s.deadServer},
		{"long SIGSTOP", s.longStall},
		{"dies while subscribing", s.diesWhileSubscribing},
	} {
		d.T().Run(c.fault, func(t *testing.T) {
			t.Parallel()
			c.run(t, c.fault)
		})
	}
}

// dead is a private server with locks on it for the calls of a fault: a hold of "held" with the ctx
// of an earlier hold released, for queries; a hold of "released", to release; a waiter for each of
// testkit.Bounds that can park behind a rival's hold of "parked-<bound>"; and "fresh-<i>", free,
// for acquisitions. Each is on a Client of its own, so that the queries' bound is not the one of a
// write in flight on the same connection. No lock has two waits across a fault (fairlock's
// TestWaitersGivingUpAcrossAStallLeaveTheLine checks that case).
type dead struct {
	s        *Suite
	tg       *testkit.Target
	clients  []*redisync.Client
	l        Lock              // "held"
	held     context.Context   // its hold
	gone     context.Context   // a hold of it released: the ctx still names the owner
	u        Lock              // "released"
	uheld    context.Context   // its hold
	rivals   []Lock            // "parked-<bound>", one per Bound
	blocking []context.Context // their holds
	waiters  []Lock            // "parked-<bound>", one per Bound
	wcs      []*redisync.Client
	fresh    [4]Lock  // "fresh-<i>": for a TryLock, a Lock with a deadline, a Lock without, a TryLock of a new Client
	base     []string // the keys before a short stall, nil for other faults
}

func (s *Suite) newDead(t *testing.T) *dead {
	d := &dead{s: s, tg: testkit.Own(t)}
	bg := context.Background()
	client := func(opts ...redisync.Option) *redisync.Client {
		c := d.tg.Client(t, opts...)
		d.clients = append(d.clients, c)
		return c
	}
	// Every Client acquires once before the fault, as a Client in use has: its first acquisition may
	// ask the server about replicas before it tries.
	var quiet Options // no renewal writes on the queries' connection meanwhile
	if s.Kind.Lease {
		quiet.Lease = time.Minute
	}
	d.l = s.newLock(t, client(), "held", quiet)
	d.gone = lock(t, d.l, bg)
	unlock(t, d.l, d.gone)
	d.held = lock(t, d.l, bg)
	d.u = s.newLock(t, client(), "released", Options{})
	d.uheld = lock(t, d.u, bg)
	rc := client()
	for _, bound := range testkit.Bounds {
		// The waiters' own tries are rare: only their bound ends their wait.
		wc := client(redisync.WithRecheckInterval(time.Minute))
		w := s.newLock(t, wc, "parked-"+bound, Options{})
		unlock(t, w, lock(t, w, bg))
		d.waiters, d.wcs = append(d.waiters, w), append(d.wcs, wc)
		r := s.rival(t, rc, "parked-"+bound)
		d.rivals, d.blocking = append(d.rivals, r), append(d.blocking, lock(t, r, bg))
	}
	// Acquisitions sent to a stalled server run there once it resumes, after the connection may have
	// given up on their answer: the Client cannot know of them, and they stay until their lease ends
	// (a short one here), as a hold does whose Client died.
	// The last one's Client has never acquired: what it must learn of the server first (the replicas)
	// is bounded as its tries are.
	for i := range d.fresh {
		d.fresh[i] = s.newLock(t, client(redisync.WithWatchdogTimeout(2*time.Second)), "fresh-"+strconv.Itoa(i), Options{})
		if i < len(d.fresh)-1 {
			unlock(t, d.fresh[i], lock(t, d.fresh[i], bg))
		}
	}
	return d
}

// parked starts a waiter parked behind the rival for each of testkit.Bounds, bounded at deadline
// from now, and returns their calls.
func (d *dead) parked(t *testing.T, deadline time.Duration, want func(bound string) error) []*call {
	start := time.Now()
	var calls []*call
	for i, bound := range testkit.Bounds {
		w := d.waiters[i]
		ended := testkit.Bounded(bound, deadline,
			func(ctx context.Context) error { _, err := w.Lock(ctx); return err },
			func(ctx context.Context, wait time.Duration) error { _, err := w.TryLock(ctx, wait); return err })
		c := &call{what: "a waiter parked with a " + bound + " bound", from: start, bound: deadline + 2*testkit.Overtime,
			want: want(bound), run: func() error { return <-ended }}
		c.start()
		calls = append(calls, c)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		for i, c := range d.wcs {
			if !d.s.waits(c) {
				return errors.New("the waiter with a " + testkit.Bounds[i] + " bound does not wait yet")
			}
		}
		if !d.s.Kind.Spins && !anySubscribed(t, d.tg) {
			return errors.New("no channel subscribed")
		}
		return nil
	})
	return calls
}

// bounded returns the calls on the free lock that end at a bound of theirs, from now.
func (d *dead) bounded(want error) []*call {
	const wait = time.Second
	bg, now := context.Background(), time.Now()
	return []*call{
		{what: "TryLock with a wait bound", from: now, bound: wait + 2*testkit.Overtime, want: want, run: func() error {
			_, err := d.fresh[0].TryLock(bg, wait)
			return err
		}},
		{what: "Lock with a deadline", from: now, bound: wait + 2*testkit.Overtime, run: func() error {
			ctx, cancel := context.WithTimeout(bg, wait)
			defer cancel()
			_, err := d.fresh[1].Lock(ctx)
			return err
		}},
		{what: "TryLock with a wait bound, of a Client that never acquired", from: now, bound: wait + 2*testkit.Overtime, run: func() error {
			_, err := d.fresh[3].TryLock(bg, wait)
			return err
		}},
	}
}

// writes returns the calls with no deadline that write, from now: Lock of the free lock and Unlock
// of a hold.
func (d *dead) writes(bound time.Duration) []*call {
	bg, now := context.Background(), time.Now()
	return []*call{
		{what: "Lock without a deadline", from: now, bound: bound, run: func() error { _, err := d.fresh[2].Lock(bg); return err }},
		{what: "Unlock", from: now, bound: bound, run: func() error { return d.u.Unlock(d.uheld) }},
	}
}

// queries returns the queries (the kind's own too), from now.
func (s *Suite) queries(d *dead) []*call {
	bg, now := context.Background(), time.Now()
	var calls []*call
	l := d.l
	queries := map[string]func() error{
		"IsLocked":                 func() error { _, err := l.IsLocked(bg); return err },
		"TTL":                      func() error { _, err := l.TTL(bg); return err },
		"IsHeld of a hold":         func() error { _, err := l.IsHeld(d.held); return err },
		"HoldCount of a hold":      func() error { _, err := l.HoldCount(d.held); return err },
		"IsHeld of a released":     func() error { _, err := l.IsHeld(d.gone); return err },
		"HoldCount of a released":  func() error { _, err := l.HoldCount(d.gone); return err },
		"HoldCount of a new owner": func() error { _, err := l.HoldCount(redisync.WithOwner(bg)); return err },
	}
	if s.Kind.Queries != nil {
		for what, q := range s.Kind.Queries(l) {
			queries[what] = func() error { return q(bg) }
		}
	}
	for what, q := range queries {
		calls = append(calls, &call{what: what, from: now, bound: testkit.RetryBound, run: q})
	}
	return calls
}

// run starts the calls not started yet, and checks them all.
func run(t *testing.T, fault string, calls []*call) {
	for _, c := range calls {
		if c.done == nil {
			c.start()
		}
	}
	for _, c := range calls {
		c.check(t, "after "+fault)
	}
}

// recover checks, once the server is back, that the holds can be released and that nothing is left
// behind.
func (s *Suite) recover(t *testing.T, d *dead) {
	names := scope{names: []string{"held", "released"}}
	for _, bound := range testkit.Bounds {
		names.names = append(names.names, "parked-"+bound)
	}
	for i := range d.fresh {
		names.names = append(names.names, "fresh-"+strconv.Itoa(i))
	}
	if d.base != nil {
		// Before anyone touches the locks again, the waiters that gave up have left, and what was
		// acquired too late has been given back, each within RetryBound of the resume. A waiter's
		// last try and its leave may have gone out on two of the Client's pooled connections, and the
		// resumed server may run the leave first: the try then records the waiter again, as a record
		// that lapses with its window (a release hands it nothing that its Client does not give back:
		// reliability's TestLockTryArrivingAfterItsWaiterLeft). Such records may linger.
		names.handedOver = true
		s.noNewKeys(t, d.tg, d.base, names, testkit.RetryBound+testkit.Margin)
	}
	// An Unlock that failed may have released or not (and after a kill the holds are gone): either
	// way the Unlock sent now clears the Client's records.
	type hold struct {
		l   Lock
		ctx context.Context
	}
	holds := []hold{{d.l, d.held}, {d.u, d.uheld}}
	for i, r := range d.rivals {
		holds = append(holds, hold{r, d.blocking[i]})
	}
	// Just after a resume the Client may still be reconnecting, and a busy machine may take its
	// Unlock past the retry bound: such an Unlock is sent again (under its request id, exactly once)
	// until it releases or finds the hold gone.
	for _, u := range holds {
		testkit.Eventually(t, testkit.StallBound+testkit.RetryBound, func() error {
			err := u.l.Unlock(u.ctx)
			if err == nil || errors.Is(err, redisync.ErrNotHeld) {
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) || send.IsConnectionError(err) {
				return err
			}
			t.Fatalf("Unlock once the server is back: %v, want nil or ErrNotHeld", err)
			return nil
		})
	}
	s.clean(t, d.tg, nil, names, d.clients...)
}

// deadServer: the calls of every kind on a killed server, or the bounded ones on a stalled server.
func (s *Suite) deadServer(t *testing.T, fault string) {
	d := s.newDead(t)
	srv := d.tg.Servers[0]
	var notAcquired func(string) error = testkit.BoundedErr
	if fault == "kill" { // a last try's error may be the network's
		notAcquired = func(string) error { return nil }
	}
	if fault != "kill" { // the keys of the holds, to which nothing must be left added
		d.base = d.tg.Keys(t)
	}
	calls := d.parked(t, 2*time.Second, notAcquired)
	var resume func()
	if fault == "kill" {
		require.NoError(t, srv.Kill())
		resume = func() { require.NoError(t, srv.Restart()) } // empty: nothing on disk
		calls = append(append(calls, d.writes(testkit.RetryBound)...), s.queries(d)...)
	} else {
		resume = testkit.Stall(t, srv, fault)
	}
	var want error
	if fault != "kill" {
		want = redisync.ErrNotAcquired
	}
	calls = append(calls, d.bounded(want)...)
	run(t, fault, calls)
	resume()
	s.recover(t, d)
}

// longStall: the calls without a deadline on a server that stalls longer than the connection waits
// for an answer.
func (s *Suite) longStall(t *testing.T, fault string) {
	d := s.newDead(t)
	resume := testkit.Stall(t, d.tg.Servers[0], "SIGSTOP")
	run(t, fault, append(d.writes(testkit.StallBound+testkit.RetryBound), s.queries(d)...))
	resume()
	s.recover(t, d)
}

// diesWhileSubscribing: a waiter whose channels cannot be subscribed still tries at its recheck
// interval, and so learns that the server has died.
func (s *Suite) diesWhileSubscribing(t *testing.T, _ string) {
	if s.Kind.Spins {
		t.Skipf("%s subscribes to nothing", s.Kind.Name)
	}
	const recheck = time.Second
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	rc := tg.Client(t)
	rival := s.rival(t, rc, "dead")
	blocking := lock(t, rival, context.Background())
	// From now on no subscription succeeds: the waiter stays in its subscribing state.
	_, err := srv.Do("ACL", "SETUSER", "default", "resetchannels")
	require.NoError(t, err)
	c := tg.Client(t, redisync.WithRecheckInterval(recheck))
	l := s.newLock(t, c, "dead", Options{})
	done := make(chan error, 1)
	go func() {
		held, err := l.Lock(context.Background())
		if err == nil {
			_ = l.Unlock(held)
			err = errAcquired
		}
		done <- err
	}()
	testkit.Eventually(t, 10*time.Second, func() error {
		if testkit.Waiters(c) == 0 {
			return errors.New("the waiter does not listen yet")
		}
		return nil
	})
	require.NoError(t, srv.Kill())
	err = testkit.ReturnsWithin(t, time.Now(), recheck+testkit.RetryBound+testkit.Overtime, "Lock on a server that died", func() error { return <-done })
	require.Error(t, err, "Lock on a killed server")
	require.NotErrorIs(t, err, errAcquired, "Lock on a killed server")
	require.NoError(t, srv.Restart()) // empty, and channels allowed again
	if err := rival.Unlock(blocking); err != nil {
		require.ErrorIs(t, err, redisync.ErrNotHeld, "Unlock once the server is back")
	}
	s.clean(t, tg, nil, scope{names: []string{"dead"}}, c, rc)
}

var errAcquired = errors.New("acquired")

// anySubscribed reports whether a node of tg has a channel subscribed.
func anySubscribed(t testing.TB, tg *testkit.Target) bool {
	t.Helper()
	for _, srv := range tg.Servers {
		for _, cmd := range []string{"CHANNELS", "SHARDCHANNELS"} {
			out, err := srv.Do("PUBSUB", cmd)
			require.NoError(t, err)
			if strings.TrimSpace(out) != "" {
				return true
			}
		}
	}
	return false
}
