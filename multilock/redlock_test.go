package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	holds "github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func newRed(t *testing.T, ls []Locker, opts ...Option) *RedLock {
	t.Helper()
	r, err := NewRedLock(ls...)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = r.With(opts...); err != nil {
		t.Fatal(err)
	}
	return r
}

// pause stops servers (SIGSTOP) until the end of the test or until the returned func is called.
func pause(t *testing.T, servers ...*redistest.Server) (resume func()) {
	t.Helper()
	for _, s := range servers {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			for _, s := range servers {
				s.Resume()
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

func TestRedLockWithStoppedServers(t *testing.T) {
	servers := startN(t, 5)
	const lease = 5 * time.Second
	const name = "rl-stopped"
	r := newRed(t, locks(t, servers, same(name, 5), rlock.WithLease(lease)), WithInstanceTimeout(200*time.Millisecond))
	if r.Quorum() != 3 {
		t.Fatalf("quorum %d, want 3", r.Quorum())
	}
	ctx := context.Background()

	// Two of five stopped: a majority is left.
	resume := pause(t, servers[3], servers[4])
	start := time.Now()
	held, err := r.TryLock(ctx, 5*time.Second)
	if err != nil {
		t.Fatalf("with 2 of 5 servers stopped: %v", err)
	}
	acquired := time.Now()
	end, ok := held.Deadline()
	if !ok {
		t.Fatal("no validity deadline on the hold's ctx")
	}
	validity := end.Sub(acquired)
	t.Logf("acquired in %v; validity %v of a %v lease", acquired.Sub(start), validity, lease)
	if validity <= 0 || validity >= lease-lease/100 {
		t.Fatalf("validity %v: want above 0 and below the lease minus drift (%v)", validity, lease-lease/100)
	}
	// Counted from the first request, which was sent after start: acquiring took longer than the
	// drift allowance (the stopped servers' instance timeout), so a validity counted from the
	// acquisition would end after this.
	if end.After(start.Add(lease)) {
		t.Fatalf("validity %v does not discount the %v spent acquiring", validity, acquired.Sub(start))
	}
	for _, s := range servers[:3] {
		if !exists(t, s, name) {
			t.Fatalf("no lock on live server %s", s.Addr)
		}
	}
	if err := r.Unlock(held); err != nil {
		t.Fatal(err)
	}
	requireNoKeys(t, servers[:3], name)
	resume()
	// Nothing is left on the woken servers (the late tries failed at the client's timeout).
	testkit.Eventually(t, 5*time.Second, func() error {
		for _, s := range servers[3:] {
			if exists(t, s, name) {
				return errors.New("late acquisition on a woken server not given back")
			}
		}
		return nil
	})

	// Three of five stopped: no majority; it fails fast and leaves nothing on the live two. A live
	// server that answers after the instance timeout (a busy machine) has what it acquired given
	// back once its answer comes, after TryLock returned: the sub-locks' lease here outlasts that
	// wait, so that only a give-back, not an expiry, empties the live servers.
	const long = time.Minute
	pause(t, servers[2], servers[3], servers[4])
	start = time.Now()
	if _, err := r.TryLockFor(ctx, 0, long); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("with 3 of 5 servers stopped: %v, want ErrNotAcquired", err)
	} else {
		t.Logf("failed in %v: %v", time.Since(start), err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("failing took %v: the instance timeout is 200ms", d)
	}
	givenBack(t, servers[:2], name)
	start = time.Now()
	if _, err := r.TryLockFor(ctx, 700*time.Millisecond, long); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock(700ms) with 3 of 5 servers stopped: %v, want ErrNotAcquired", err)
	}
	if d := time.Since(start); d < 700*time.Millisecond || d > 3*time.Second {
		t.Fatalf("TryLock(700ms) gave up after %v", d)
	}
	givenBack(t, servers[:2], name)
}

// givenBack waits until none of servers has key, whose lease outlasts the wait.
func givenBack(t *testing.T, servers []*redistest.Server, key string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, s := range servers {
			if exists(t, s, key) {
				return fmt.Errorf("key %q left on %s", key, s.Addr)
			}
		}
		return nil
	})
}

func TestRedLockMutualExclusion(t *testing.T) {
	servers := startN(t, 5)
	const clients, rounds = 8, 5
	ctx := timeout(t, 60*time.Second)
	var sec testkit.Section
	var wg sync.WaitGroup
	for range clients {
		// One process: a Client per server.
		r := newRed(t, locks(t, servers, same("rl-mutex", 5), rlock.WithLease(10*time.Second)),
			WithInstanceTimeout(time.Second), WithRetryDelay(20*time.Millisecond))
		wg.Go(func() {
			for range rounds {
				held, err := r.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				sec.Enter()
				time.Sleep(time.Millisecond)
				sec.Leave()
				if err := r.Unlock(held); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d entries, at most %d inside at once", sec.Entries(), sec.Max())
	if sec.Max() != 1 || sec.Entries() != clients*rounds {
		t.Fatalf("max %d inside, %d entries; want 1 and %d", sec.Max(), sec.Entries(), clients*rounds)
	}
	requireNoKeys(t, servers, "rl-mutex")
}

func TestRedLockRefusedByMajorityHeldElsewhere(t *testing.T) {
	servers := startN(t, 3)
	const name = "rl-busy"
	ctx := context.Background()
	// Another owner holds the lock on two of three servers.
	other := locks(t, servers[:2], same(name, 2))
	var otherHeld []context.Context
	for _, l := range other {
		h, err := l.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		otherHeld = append(otherHeld, h)
	}
	r := newRed(t, locks(t, servers, same(name, 3)), WithInstanceTimeout(time.Second))
	if _, err := r.TryLock(ctx, 300*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock against a majority held elsewhere: %v", err)
	}
	// Ours was given back on the third server; theirs is untouched.
	requireNoKeys(t, servers[2:], name)
	for i, l := range other {
		if ok, _ := l.(*rlock.Lock).IsHeld(otherHeld[i]); !ok {
			t.Fatal("the other owner's lock was disturbed")
		}
		l.Unlock(otherHeld[i])
	}
	held, err := r.TryLock(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := held.Deadline(); ok {
		t.Fatal("sub-locks kept by the watchdog, yet the hold has a deadline")
	}
	r.Unlock(held)
}

func TestRedLockValidityEnds(t *testing.T) {
	servers := startN(t, 3)
	const lease = 500 * time.Millisecond
	r := newRed(t, locks(t, servers, same("rl-valid", 3), rlock.WithLease(lease)), WithInstanceTimeout(time.Second))
	start := time.Now()
	held, err := r.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The validity the hold computed ends within the lease counted from before the first request; a
	// busy machine may run the timer late, so the end itself is only bounded generously.
	end, ok := held.Deadline()
	if !ok || end.After(start.Add(lease)) {
		t.Fatalf("hold's deadline %v after the start (set %v), want within the %v lease", end.Sub(start), ok, lease)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold's ctx did not end with its validity")
	}
	if early := end.Sub(time.Now()); early > 0 {
		t.Fatalf("hold's ctx ended %v before its deadline", early)
	}
	if cause := context.Cause(held); !errors.Is(cause, redisync.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", cause)
	}
	if err := r.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock after the validity ended: %v, want ErrNotHeld", err)
	}
}

func TestRedLockLostWithMajority(t *testing.T) {
	servers := startN(t, 3)
	const name = "rl-lost"
	// Kept by the watchdogs, which renew every third of their timeout: a sub-lock deleted under its
	// holder is found gone by the next renewal. The timeout leaves a busy machine 2 s for each
	// renewal, since one that fails loses its sub-lock when its lease may have ended.
	const timeout = 6 * time.Second
	firstLost := make(chan struct{})
	var once sync.Once
	var ls []Locker
	for i, s := range servers {
		opts := []redisync.Option{redisync.WithWatchdogTimeout(timeout)}
		if i == 0 {
			opts = append(opts, redisync.WithEvents(func(e redisync.Event) {
				if e.Kind == redisync.EventLost {
					once.Do(func() { close(firstLost) })
				}
			}))
		}
		l, err := rlock.New(connectStalling(t, s, 0, opts...), name)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	r := newRed(t, ls, WithInstanceTimeout(5*time.Second))
	held, err := r.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	servers[0].Do("DEL", name)
	select {
	case <-firstLost:
	case <-time.After(2 * timeout):
		t.Fatal("the sub-lock deleted on the first server was not reported lost")
	}
	// One of three lost: the hold goes on, and the others are still renewed (were the hold ended,
	// they would have been given back).
	testkit.AwaitRenewals(t, (&testkit.Target{Addrs: []string{servers[1].Addr}}).Redis(t), name, 1)
	if held.Err() != nil {
		t.Fatalf("one of three lost ended the hold: %v", context.Cause(held))
	}
	servers[1].Do("DEL", name)
	select {
	case <-held.Done():
	case <-time.After(2 * timeout):
		t.Fatal("two of three lost, and the hold's ctx is still alive")
	}
	// Found gone by a renewal, not reckoned lost when its lease may have ended.
	if cause := context.Cause(held); !errors.Is(cause, redisync.ErrLost) || !strings.Contains(cause.Error(), "found it gone") {
		t.Fatalf("cause %v, want ErrLost found by a renewal", cause)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if exists(t, servers[2], name) {
			return errors.New("the remaining sub-lock was not given back")
		}
		return nil
	})
	if err := r.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock after loss: %v, want ErrNotHeld", err)
	}
}

// A server that answers after the instance timeout but does acquire: the late acquisition is given
// back, while the hold goes on with the majority.
func TestRedLockGivesBackLateAcquisition(t *testing.T) {
	servers := startN(t, 3)
	const name = "rl-late"
	late := servers[2]
	if _, err := late.Do("CONFIG", "SET", "notify-keyspace-events", "Kgh"); err != nil {
		t.Fatal(err)
	}
	rdb := (&testkit.Target{Addrs: []string{late.Addr}}).Redis(t)
	events := make(chan string, 8)
	subCtx, stop := context.WithCancel(context.Background())
	received := make(chan struct{})
	defer func() { stop(); <-received }()
	go func() {
		defer close(received)
		rdb.Receive(subCtx, rdb.B().Subscribe().Channel("__keyspace@0__:"+name).Build(), func(m rueidis.PubSubMessage) {
			events <- m.Message
		})
	}()
	testkit.Eventually(t, 10*time.Second, func() error {
		if out, _ := late.Do("PUBSUB", "NUMSUB", "__keyspace@0__:"+name); !strings.HasSuffix(out, "1") {
			return errors.New("keyspace subscription not ready")
		}
		return nil
	})

	// The live servers have 2 s to answer, time enough on a busy machine; the late one answers once
	// resumed, after the attempt gave up on it, on a connection that waits for it (rueidis's 10 s).
	r := newRed(t, locksStalling(t, servers, 0, same(name, 3), rlock.WithLease(10*time.Second)), WithInstanceTimeout(2*time.Second))
	resume := pause(t, late)
	held, err := r.TryLock(context.Background(), 0)
	resume()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "del" {
		select {
		case e := <-events:
			seen = append(seen, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("keyspace events on the late server: %v; want the late acquisition and its release", seen)
		}
	}
	// The acquisition writes the hash and its lease (a free lock's first try: HSET, PEXPIRE); the
	// give-back drops the owner's field, and the hash goes with it.
	if got := strings.Join(seen, " "); got != "hset expire hdel del" && got != "hset expire hincrby del" {
		t.Fatalf("keyspace events on the late server: %v; want the acquisition, then its release", seen)
	}
	if held.Err() != nil || !exists(t, servers[0], name) || !exists(t, servers[1], name) {
		t.Fatal("the hold did not go on with the majority")
	}
	if err := r.Unlock(held); err != nil {
		t.Fatal(err)
	}
	requireNoKeys(t, servers, name)
}

// deadlines is a Locker that records the deadline of every hold its Locker grants.
type deadlines struct {
	Locker
	mu   sync.Mutex
	ends []time.Time
}

func (d *deadlines) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	held, err := d.Locker.TryLock(ctx, wait)
	if err == nil {
		end, _ := held.Deadline()
		d.mu.Lock()
		d.ends = append(d.ends, end)
		d.mu.Unlock()
	}
	return held, err
}

// The sub-locks' deadlines already exclude the clock drift allowance; the RedLock's validity moves
// them back to the attempt's start and takes nothing off again.
func TestRedLockValiditySubtractsDriftOnce(t *testing.T) {
	servers := startN(t, 3)
	const lease = 100 * time.Second // a drift allowance of about a second, far above the time to acquire
	var subs []*deadlines
	var ls []Locker
	for _, l := range locks(t, servers, same("rl-drift", 3), rlock.WithLease(lease)) {
		d := &deadlines{Locker: l}
		subs, ls = append(subs, d), append(ls, d)
	}
	r := newRed(t, ls, WithInstanceTimeout(5*time.Second))
	start := time.Now()
	held, err := r.Lock(context.Background())
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unlock(held)
	end, ok := held.Deadline()
	if !ok {
		t.Fatal("no validity deadline on the hold's ctx")
	}
	var ends []time.Time
	for _, d := range subs {
		d.mu.Lock()
		ends = append(ends, d.ends...)
		d.mu.Unlock()
	}
	if len(ends) < r.Quorum() {
		t.Fatalf("%d sub-locks recorded a hold, want at least %d", len(ends), r.Quorum())
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return b.Compare(a) }) // latest first
	if end.After(ends[r.Quorum()-1]) {
		t.Fatalf("validity ends %v after the quorum's sub-lock deadline", end.Sub(ends[r.Quorum()-1]))
	}
	// Each sub-lock's deadline counts from when its try was sent, at most elapsed after the attempt
	// began: the validity, counted from the attempt's start, is at most that much earlier.
	if low := ends[len(ends)-1].Add(-elapsed); end.Before(low) {
		t.Fatalf("validity ends %v before the earliest sub-lock deadline less the %v spent acquiring: drift subtracted twice?", low.Sub(end), elapsed)
	}
	if low := start.Add(lease - holds.Drift(lease)); end.Before(low) {
		t.Fatalf("validity ends %v before start + lease - drift", low.Sub(end))
	}
}
