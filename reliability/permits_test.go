package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// The two ways the soak lost a semaphore permit, each caused here on purpose (a server of the test's
// own, the waiting Client behind a proxy, the releasing one straight to the server).

// permitsEnv is a semaphore with its count at 0, a waiting Client behind a proxy and a releasing one.
type permitsEnv struct {
	t       *testing.T
	srv     *redistest.Server
	proxy   *redistest.Proxy
	waiting *redisync.Client
	rel     *semaphore.Semaphore
	name    string
}

func newPermitsEnv(t *testing.T, name string, opts ...redisync.Option) *permitsEnv {
	tg := testkit.Own(t)
	e := &permitsEnv{t: t, srv: tg.Servers[0], name: name}
	e.proxy = redistest.StartProxy(t, e.srv.Addr)
	via := &testkit.Target{Name: "standalone", Addrs: []string{e.proxy.Addr()}, Servers: tg.Servers}
	e.waiting = via.Client(t, opts...)
	e.rel, _ = semaphore.New(tg.Client(t), name)
	if _, err := e.rel.TrySetPermits(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *permitsEnv) get(args ...string) string {
	e.t.Helper()
	out, err := e.srv.Do(args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// settled waits until the semaphore holds want permits, no grant and no waiter record.
func (e *permitsEnv) settled(want int) {
	e.t.Helper()
	testkit.Eventually(e.t, 10*time.Second, func() error {
		grants := e.get("HGETALL", "redisync_semaphore_grants:{"+e.name+"}")
		records := e.get("ZRANGE", "redisync_semaphore_waiters:{"+e.name+"}", "0", "-1")
		if n := e.get("GET", e.name); n != strconv.Itoa(want) || grants != "" || records != "" {
			return fmt.Errorf("%s holds %s permits, want %d; grants %q, waiter records %q", e.name, n, want, grants, records)
		}
		return nil
	})
}

// acquireTry matches a semaphore try of name that records its waiter (its tag, ARGV[3], is set).
func acquireTry(name string) func(args []string) bool {
	return func(args []string) bool {
		n, err := strconv.Atoi(args[2])
		return err == nil && n == 5 && args[3] == name && len(args) >= 3+n+6 && args[3+n+2] != ""
	}
}

// A waiter's try that records it is answered after the server ran it, but the answer is lost; a
// release hands the waiter permits meanwhile; the try is sent again, and another release comes
// before the waiter hears of anything. The send made again must take the grant: before, it recorded
// the waiter anew (it did not know that the lost send had), the second release handed the same
// waiter a second grant in place of the first, and a permit was gone for good.
func TestResentTryTakesTheGrantMadeMeanwhile(t *testing.T) {
	e := newPermitsEnv(t, "resent-try")
	first := e.proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: e.name, Match: acquireTry(e.name)})
	defer first.Release()
	s, _ := semaphore.New(e.waiting, e.name)
	got := make(chan error, 1)
	go func() { got <- s.TryAcquire(context.Background(), 1, 20*time.Second) }()
	if !first.Wait(10 * time.Second) {
		t.Fatal("the waiter's recording try never came")
	}
	// The server has recorded the waiter; its answer waits in the proxy. A release hands it a permit.
	if err := e.rel.Release(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if g := e.get("HLEN", "redisync_semaphore_grants:{"+e.name+"}"); g != "1" {
			return fmt.Errorf("%s grants", g)
		}
		return nil
	})
	// The answer is lost with its connection, and the try sent again; the server runs it, and its
	// answer waits in turn while a second release comes.
	again := e.proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: e.name, Match: acquireTry(e.name)})
	defer again.Release()
	first.Lose()
	if !again.Wait(10 * time.Second) {
		t.Fatal("the try was not sent again")
	}
	if err := e.rel.Release(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	again.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.settled(2) // two released, one acquired and released again
}

// A waiter gives up while one of its tries is held up in the network; the try reaches the server
// after the waiter left. It must do nothing: before, it recorded the waiter that had left, a
// release handed that record permits, and when the hand-over's message was lost too (its Client's
// Pub/Sub connection cut), nothing gave them back until the grants' key expired (10 minutes).
func TestTryArrivingAfterItsWaiterLeftRecordsNothing(t *testing.T) {
	// A long recheck interval: the Client's other waiter makes no try of its own during the test.
	e := newPermitsEnv(t, "late-try", redisync.WithRecheckInterval(time.Minute))
	s, _ := semaphore.New(e.waiting, e.name)
	// The Client's other waiter keeps it listening on its wake channel, recorded first.
	other := make(chan error, 1)
	go func() { other <- s.TryAcquire(context.Background(), 1, time.Minute) }()
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := e.get("ZCARD", "redisync_semaphore_waiters:{"+e.name+"}"); n != "1" {
			return fmt.Errorf("%s waiter records", n)
		}
		return nil
	})
	// The leaving waiter's recording try is held up in the network; the send made again records it.
	late := e.proxy.Arm(redistest.Rule{Cut: redistest.Delay, Key: e.name, Match: acquireTry(e.name)})
	defer late.Disarm()
	if err := s.TryAcquire(context.Background(), 1, time.Second); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("the waiter that leaves: %v, want ErrNotAcquired", err)
	}
	if !late.Wait(10 * time.Second) {
		t.Fatal("the leaving waiter's try was not held up")
	}
	testkit.Eventually(t, 10*time.Second, func() error { // it left: its record is gone
		if n := e.get("ZCARD", "redisync_semaphore_waiters:{"+e.name+"}"); n != "1" {
			return fmt.Errorf("%s waiter records", n)
		}
		return nil
	})
	if _, err := late.Deliver(); err != nil { // the held-up try reaches the server now
		t.Fatal(err)
	}
	// Two permits released at once: a hand-over to each record. The message to the leaving
	// waiter's Client is lost with its connection.
	lost := e.proxy.Arm(redistest.Rule{Channel: "redisync_semaphore__wake"})
	defer lost.Disarm()
	if err := e.rel.Release(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if err := <-other; err != nil { // it tries again once its Client has subscribed again
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.settled(2)
}

// The same for a lock: a waiter's recording try is answered after the server ran it, the answer is
// lost, and the lock becomes free (its holder's lease ended) before the try is sent again, which
// acquires. The waiter's record must go with that acquisition: before, it stayed (the send made
// again did not know that the lost one had recorded it), and the waiter's own release handed the
// lock back to it, so that a successful Unlock left the lock held (the soak's "a successful Unlock
// left the hold").
func TestResentLockTryRemovesItsRecord(t *testing.T) {
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	proxy := redistest.StartProxy(t, srv.Addr)
	via := &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: tg.Servers}
	holder := newLock(t, tg.Client(t), "resent-lock", rlock.WithLease(500*time.Millisecond))
	first, err := holder.TryLock(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Its lease ends on its own; the Unlock, which then finds nothing, ends the Client's record of it
	// (a dropped ctx would leave that to the garbage collector).
	defer holder.Unlock(first)
	waiter := newLock(t, via.Client(t), "resent-lock")
	// The waiter's try that records it (its tag, the last ARGV, is set).
	recording := func(args []string) bool {
		n, err := strconv.Atoi(args[2])
		return err == nil && args[3] == "resent-lock" && len(args) > 3+n && args[len(args)-1] != "" && n == 5
	}
	held := proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: "resent-lock", Match: recording})
	defer held.Release()
	got := testkit.Background(func() (context.Context, error) { return waiter.TryLock(context.Background(), 20*time.Second) })
	if !held.Wait(10 * time.Second) {
		t.Fatal("the waiter's recording try never came")
	}
	records := "redisync_lock_waiters:{resent-lock}"
	testkit.Eventually(t, 10*time.Second, func() error { // the holder's lease ends
		if n, err := srv.Do("EXISTS", "resent-lock"); err != nil || n != "0" {
			return fmt.Errorf("still held (%v)", err)
		}
		return nil
	})
	held.Lose() // the answer is lost with its connection: the try is sent again, and acquires
	h := testkit.Await(t, got, "the waiter")
	if members, err := srv.Do("ZRANGE", records, "0", "-1"); err != nil || members != "" {
		t.Fatalf("the waiter holds the lock and is still recorded as waiting: %q (%v)", members, err)
	}
	if err := waiter.Unlock(h); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.Do("EXISTS", "resent-lock"); err != nil || n != "0" {
		t.Fatalf("the lock is held after its only holder's Unlock (%v)", err)
	}
}
