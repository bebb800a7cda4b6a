// Package locksuite is the conformance suite that every lock package of redisync runs: what a user
// relies on from any lock, whatever its protocol in Redis. Calls on a dead or stalled server fail
// within their bound; a free lock leaves nothing behind; an owner re-enters through its held ctx,
// and goroutines fanned out from it take turns (or share, on a shared kind); a hold lost without
// Unlock ends its ctx with redisync.ErrLost; the watchdog keeps a hold; fencing tokens grow. A lock
// package describes its lock kind with a Kind and runs the suite from a test:
//
//	func TestConformance(t *testing.T) { locksuite.Run(t, kind) }
//
// The suite drives locks through their public API only, and looks inside a Client through testkit
// alone. Its cases run on the shared standalone server and cluster (testkit.ForEach), except those
// that kill or stop a server, which take private ones and run in parallel.
package locksuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// Lock is the API every lock kind of redisync has: rlock.Lock, fairlock.Lock, and either side of an
// rwlock.RWLock.
type Lock interface {
	Name() string
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	LockFor(ctx context.Context, lease time.Duration) (context.Context, error)
	TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error)
	Extend(ctx context.Context, lease time.Duration) error
	Unlock(ctx context.Context) error
	ForceUnlock(ctx context.Context) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	IsHeld(ctx context.Context) (bool, error)
	IsHeldBy(ctx context.Context, owner int64) (bool, error)
	HoldCount(ctx context.Context) (int, error)
	TTL(ctx context.Context) (time.Duration, error)
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

// Fenced is a Lock that hands out fencing tokens.
type Fenced interface {
	Lock
	Token(ctx context.Context) (int64, bool)
}

// Options are the options of a kind's New that the suite sets; the zero value is a lock with none.
type Options struct {
	Lease        time.Duration // a fixed lease (WithLease), 0 for the watchdog
	Fencing      bool          // WithFencing
	NonReentrant bool          // NonReentrant
}

// Kind describes one lock kind to the suite: how to make one, and what it promises.
type Kind struct {
	// Name names the kind in test output: "rlock", "rwlock read".
	Name string
	// New returns the lock called name on c, with the options o. The suite asks only for the options
	// that the capabilities below admit.
	New func(c *redisync.Client, name string, o Options) (Lock, error)
	// Rival returns a lock on the same name that excludes every holder of this kind, for a shared kind
	// (a read lock's write lock). Nil means New with no options: an exclusive kind excludes itself.
	Rival func(c *redisync.Client, name string) (Lock, error)

	Shared       bool // several owners may hold at once, and one owner's holds go in any order
	Reentrant    bool // an owner may lock again through the ctx its Lock returned
	Lease        bool // New honours Options.Lease
	Fencing      bool // New honours Options.Fencing, and returns a Fenced then
	NonReentrant bool // New honours Options.NonReentrant
	// Spins: a waiter sleeps between its tries instead of listening (a spin lock): it subscribes to
	// nothing, and its wait is seen as the Client's record of the acquisition under way.
	Spins bool

	// Kept returns the keys without expiry that the lock called name, made with o, keeps in Redis by
	// design when free (a fencing counter). Nil means none.
	Kept func(name string, o Options) []string
	// Lingering returns the keys that the lock called name may keep for a while, each with an
	// expiry, after waiters have come and gone, and, with handedOver, after a release handed the lock
	// to one of them (rlock's record of the Clients that listen for hand-overs, which outlives their
	// last wait, and the mark of a hand-over, which outlives the grant). A name ending in "*" stands
	// for every key it prefixes. Nil means none.
	Lingering func(name string, handedOver bool) []string
	// Queries returns the kind's own read-only calls beyond Lock's (a fair lock's Waiting), which
	// must fail on a dead server within the bound of every query.
	Queries func(l Lock) map[string]func(ctx context.Context) error
	// Layout names the kind's data under its name, as testkit.Foreign names layouts ("lock":
	// Redisson's lock hash, "rwlock"): every other data under the name is refused.
	Layout string
}

// waits reports whether an acquisition of the kind waits on c, which holds nothing else.
func (s *Suite) waits(c *redisync.Client) bool {
	if s.Kind.Spins {
		return testkit.Holds(c) > 0
	}
	return testkit.Waiters(c) > 0
}

// Suite is the conformance suite for one Kind on the shared servers. Its cases take the *testing.T
// of the subtest they run in rather than Suite.T(), so that those that wait in parallel share no
// state.
type Suite struct {
	suite.Suite
	Kind Kind
}

// DeadServerSuite is the conformance suite's cases for one Kind that kill or stop a server: each on
// a private server, so that they run beside Suite's.
type DeadServerSuite struct {
	suite.Suite
	s *Suite // the helpers and the Kind
}

// Run runs the suite for kind as subtests of t: Suite and DeadServerSuite, side by side.
func Run(t *testing.T, kind Kind) {
	if kind.Name == "" || kind.New == nil {
		t.Fatal("locksuite: a Kind needs a Name and New")
	}
	t.Run("shared servers", func(t *testing.T) {
		t.Parallel()
		suite.Run(t, &Suite{Kind: kind})
	})
	t.Run("private servers", func(t *testing.T) {
		t.Parallel()
		suite.Run(t, &DeadServerSuite{s: &Suite{Kind: kind}})
	})
}

// each runs fn on the shared standalone server and on the shared cluster.
func (s *Suite) each(fn func(t *testing.T, tg *testkit.Target)) {
	testkit.ForEach(s.T(), fn)
}

// need skips the case unless the kind has the capability it tests.
func (s *Suite) need(has bool, capability string) {
	if !has {
		s.T().Skipf("%s has no %s", s.Kind.Name, capability)
	}
}

// name is a lock name of the test's own on the shared servers.
func name(t testing.TB) string { return "locksuite:" + t.Name() }

func (s *Suite) newLock(t testing.TB, c *redisync.Client, name string, o Options) Lock {
	t.Helper()
	l, err := s.Kind.New(c, name, o)
	require.NoError(t, err, "New")
	return l
}

// rival returns a lock on name that excludes every holder of the kind.
func (s *Suite) rival(t testing.TB, c *redisync.Client, name string) Lock {
	t.Helper()
	if s.Kind.Rival == nil {
		return s.newLock(t, c, name, Options{})
	}
	l, err := s.Kind.Rival(c, name)
	require.NoError(t, err, "Rival")
	return l
}

// kept returns the keys a free lock called name, made with o, keeps by design without expiry.
func (s *Suite) kept(name string, o Options) []string {
	if s.Kind.Kept == nil {
		return nil
	}
	return s.Kind.Kept(name, o)
}

func lock(t testing.TB, l Lock, ctx context.Context) context.Context {
	t.Helper()
	held, err := l.Lock(ctx)
	require.NoError(t, err, "Lock")
	require.NotNil(t, held, "Lock returned no ctx")
	return held
}

func unlock(t testing.TB, l Lock, ctx context.Context) {
	t.Helper()
	require.NoError(t, l.Unlock(ctx), "Unlock")
}

func holdCount(t testing.TB, l Lock, ctx context.Context) int {
	t.Helper()
	n, err := l.HoldCount(ctx)
	require.NoError(t, err, "HoldCount")
	return n
}

func isLocked(t testing.TB, l Lock) bool {
	t.Helper()
	locked, err := l.IsLocked(context.Background())
	require.NoError(t, err, "IsLocked")
	return locked
}

func isHeld(t testing.TB, l Lock, ctx context.Context) bool {
	t.Helper()
	held, err := l.IsHeld(ctx)
	require.NoError(t, err, "IsHeld")
	return held
}

func ttl(t testing.TB, l Lock) time.Duration {
	t.Helper()
	d, err := l.TTL(context.Background())
	require.NoError(t, err, "TTL")
	return d
}

// refused checks that l, on behalf of a new owner, cannot acquire now.
func refused(t testing.TB, l Lock, what string) {
	t.Helper()
	held, err := l.TryLock(context.Background(), 0)
	if err == nil {
		_ = l.Unlock(held)
	}
	require.ErrorIs(t, err, redisync.ErrNotAcquired, "%s: another owner's TryLock", what)
}

// alive checks that none of the hold ctxs has ended.
func alive(t testing.TB, what string, held ...context.Context) {
	t.Helper()
	for i, h := range held {
		require.NoError(t, context.Cause(h), "%s: hold %d of %d ended", what, i+1, len(held))
	}
}

// ended waits until ctx has ended, at most d, and returns its cause.
func ended(t testing.TB, ctx context.Context, d time.Duration, what string) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		t.Fatalf("%s: the hold's ctx has not ended after %v", what, d)
		return nil
	}
}

// call is one call made in a test's circumstances (a fault, say): it must fail, with want if set,
// within bound of from.
type call struct {
	what  string
	from  time.Time
	bound time.Duration
	want  error
	run   func() error
	done  chan returned
}

// returned is how a call returned, and when.
type returned struct {
	err error
	at  time.Time
}

// start runs c on a goroutine of its own.
func (c *call) start() {
	c.done = make(chan returned, 1)
	go func() {
		err := c.run()
		c.done <- returned{err, time.Now()}
	}()
}

// check waits for c and checks how and when it returned; when says in what circumstances.
func (c *call) check(t *testing.T, when string) {
	t.Helper()
	var r returned
	select {
	case r = <-c.done: // returned already: its time says whether in time
	default:
		select {
		case r = <-c.done:
		case <-time.After(time.Until(c.from.Add(c.bound + testkit.Margin))):
			t.Fatalf("%s, %s, has not returned after %v, want within %v", c.what, when, time.Since(c.from), c.bound)
		}
	}
	require.LessOrEqual(t, r.at.Sub(c.from), c.bound+testkit.Margin, "%s, %s, returned late", c.what, when)
	require.Error(t, r.err, "%s, %s, succeeded", c.what, when)
	if c.want != nil {
		require.ErrorIs(t, r.err, c.want, "%s, %s", c.what, when)
	}
}

// errs collects what goroutines report, for the test's goroutine to check.
type errs struct {
	mu   sync.Mutex
	list []error
}

func (e *errs) add(err error) {
	if err != nil {
		e.mu.Lock()
		e.list = append(e.list, err)
		e.mu.Unlock()
	}
}

func (e *errs) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.list...)
}

// section detects holders that overlap when they must not: an exclusive holder with anyone else.
// Shared holders may overlap each other, and the most of them inside at once is recorded.
type section struct {
	shared, exclusive, maxShared, maxExclusive, bad, entries atomic.Int64
}

func (s *section) enter(exclusive bool) {
	s.entries.Add(1)
	if exclusive {
		n := s.exclusive.Add(1)
		raise(&s.maxExclusive, n)
		if n != 1 || s.shared.Load() != 0 {
			s.bad.Add(1)
		}
		return
	}
	raise(&s.maxShared, s.shared.Add(1))
	if s.exclusive.Load() != 0 {
		s.bad.Add(1)
	}
}

func (s *section) leave(exclusive bool) {
	if exclusive {
		s.exclusive.Add(-1)
	} else {
		s.shared.Add(-1)
	}
}

func raise(max *atomic.Int64, n int64) {
	for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
	}
}

// counter is kept in the test process and updated inside the section in two steps with a pause
// between, so that holders that overlap lose an increment as well as showing in the section.
type counter struct {
	mu sync.Mutex
	v  int
}

func (c *counter) incr() {
	c.mu.Lock()
	v := c.v
	c.mu.Unlock()
	time.Sleep(20 * time.Microsecond)
	c.mu.Lock()
	c.v = v + 1
	c.mu.Unlock()
}

func (c *counter) value() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

// scope is what the locks of a case may leave behind by design: the keys the kind keeps for the
// locks called names, made with o, and those that linger for a while, when a release handed one of
// them to a waiter too.
type scope struct {
	names      []string
	o          Options
	handedOver bool
}

// clean waits until tg holds no key that was not in before but those in sc (the lingering ones with
// an expiry), until no node has a channel subscribed, and until every client is idle: the locks
// left nothing behind.
func (s *Suite) clean(t testing.TB, tg *testkit.Target, before []string, sc scope, clients ...*redisync.Client) {
	t.Helper()
	// Latches and records are deleted once answered; their TTL (10 s at least) would empty the server
	// later on its own, so only the deletes can pass this bound.
	s.noNewKeys(t, tg, before, sc, 5*time.Second)
	tg.RequireNoSubscriptions(t)
	testkit.Eventually(t, 10*time.Second, func() error {
		for i, c := range clients {
			if err := testkit.Idle(c); err != nil {
				return fmt.Errorf("client %d: %w", i, err)
			}
		}
		return nil
	})
}

// noNewKeys waits until tg holds no key that was not in before but those in sc (the lingering ones
// with an expiry), at most d.
func (s *Suite) noNewKeys(t testing.TB, tg *testkit.Target, before []string, sc scope, d time.Duration) {
	t.Helper()
	var kept, lingering []string
	for _, n := range sc.names {
		kept = append(kept, s.kept(n, sc.o)...)
		if s.Kind.Lingering != nil {
			lingering = append(lingering, s.Kind.Lingering(n, sc.handedOver)...)
		}
	}
	rdb := tg.Redis(t)
	testkit.Eventually(t, d, func() error {
		var left []string
		for _, k := range tg.NewKeys(t, before) {
			switch {
			case slices.Contains(kept, k):
			case slices.ContainsFunc(lingering, func(l string) bool {
				p, ok := strings.CutSuffix(l, "*")
				return l == k || ok && strings.HasPrefix(k, p)
			}):
				if ms := testkit.DoString(t, rdb, "PTTL", k); ms == "-1" {
					return fmt.Errorf("key %q, which may linger, has no expiry", k)
				}
			default:
				left = append(left, k)
			}
		}
		if len(left) > 5 {
			return fmt.Errorf("%d keys left behind, among them %q", len(left), left[:5])
		}
		if len(left) != 0 {
			return fmt.Errorf("keys left behind: %q", left)
		}
		return nil
	})
}
