package redisync_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// recorder keeps the events a Client reports, and the log lines it writes.
type recorder struct {
	mu     sync.Mutex
	events []redisync.Event
	logs   bytes.Buffer
}

func (r *recorder) options() []redisync.Option {
	return []redisync.Option{
		redisync.WithEvents(func(e redisync.Event) {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}),
		redisync.WithLogger(slog.New(slog.NewTextHandler(r, nil))),
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.Write(p)
}

func (r *recorder) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// await waits until an event of kind has been reported and returns the first.
func (r *recorder) await(t *testing.T, kind redisync.EventKind) redisync.Event {
	t.Helper()
	var got redisync.Event
	testkit.Eventually(t, 20*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.events {
			if e.Kind == kind {
				got = e
				return nil
			}
		}
		return fmt.Errorf("no %v event among %v", kind, r.events)
	})
	return got
}

func (r *recorder) count(kind redisync.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func newLock(t *testing.T, c *redisync.Client, name string, opts ...rlock.Option) *rlock.Lock {
	t.Helper()
	l, err := rlock.New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// slow makes a waiter's own tries rare: only a wake-up or a hand-over is prompt.
var slow = redisync.WithRecheckInterval(time.Minute)

func TestEventsAcquiredAndReleased(t *testing.T) {
	tg := testkit.Standalone(t)
	var r recorder
	l := newLock(t, tg.Client(t, r.options()...), "events-own")
	held, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Lock(held) // re-entry is an acquisition too
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(again); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]redisync.EventKind, len(r.events))
	for i, e := range r.events {
		kinds[i] = e.Kind
		if e.Primitive != "lock" || e.Name != "events-own" {
			t.Errorf("event %+v: want primitive \"lock\", name \"events-own\"", e)
		}
		if e.Kind == redisync.EventAcquired && (e.HandedOver || e.Wait <= 0) {
			t.Errorf("uncontended acquisition reported %+v: want a positive wait, no hand-over", e)
		}
		if e.Kind == redisync.EventReleased && e.Held <= 0 {
			t.Errorf("release reported %+v: want a positive hold time", e)
		}
	}
	want := []redisync.EventKind{redisync.EventAcquired, redisync.EventAcquired, redisync.EventReleased, redisync.EventReleased}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if r.events[3].Held < r.events[2].Held {
		t.Errorf("outer acquisition held %v, less than the inner %v", r.events[3].Held, r.events[2].Held)
	}
}

func TestEventsHandOver(t *testing.T) {
	tg := testkit.Standalone(t)
	holder := newLock(t, tg.Client(t), "events-hand")
	held, err := holder.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	waiter := newLock(t, tg.Client(t, append(r.options(), slow)...), "events-hand")
	got := testkit.Background(func() (context.Context, error) { return waiter.Lock(context.Background()) })
	// The waiter has left its record, which its try makes once it listens: the release hands over.
	// (Counting the server's script calls would count the holder's renewals too.)
	rdb := tg.Redis(t)
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := testkit.DoString(t, rdb, "ZCARD", "redisync_lock_waiters:{events-hand}"); n != "1" {
			return fmt.Errorf("%s waiter records, want 1", n)
		}
		return nil
	})
	if err := holder.Unlock(held); err != nil {
		t.Fatal(err)
	}
	h := testkit.Await(t, got, "waiter")
	e := r.await(t, redisync.EventAcquired)
	if !e.HandedOver || e.Wait <= 0 {
		t.Fatalf("acquisition reported %+v: want a hand-over after a positive wait", e)
	}
	if err := waiter.Unlock(h); err != nil {
		t.Fatal(err)
	}
}

// A lock deleted under its holder is reported lost by the watchdog, and logged.
func TestEventsLost(t *testing.T) {
	tg := testkit.Standalone(t)
	var r recorder
	l := newLock(t, tg.Client(t, append(r.options(), redisync.WithWatchdogTimeout(900*time.Millisecond))...), "events-lost")
	held, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testkit.Do(t, tg.Redis(t), "DEL", "events-lost")
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told that its lock is gone")
	}
	e := r.await(t, redisync.EventLost)
	if !errors.Is(e.Cause, redisync.ErrLost) || e.Held <= 0 || e.Name != "events-lost" {
		t.Fatalf("lost event %+v: want ErrLost after a positive hold time", e)
	}
	if log := r.log(); !strings.Contains(log, "hold lost") || !strings.Contains(log, "events-lost") {
		t.Fatalf("the loss was not logged: %q", log)
	}
	if n := r.count(redisync.EventReleased); n != 0 {
		t.Fatalf("%d releases reported for a lost lock", n)
	}
}

// A stalled server fails the renewals: each failed round is reported, then the loss once the lease
// may have ended. A round gives up after a third of the lease, so the first failure comes at about
// two thirds of it, and a failure that a busy machine reports after the loss is not reported at all
// (the hold has ended): the lease of 12 s leaves 4 s between the two.
func TestEventsRenewalFailed(t *testing.T) {
	tg := testkit.Own(t)
	var r recorder
	l := newLock(t, tg.Client(t, append(r.options(), redisync.WithWatchdogTimeout(12*time.Second))...), "events-renewal")
	held, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	defer tg.Servers[0].Resume()
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told that its lease may have ended")
	}
	e := r.await(t, redisync.EventRenewalFailed)
	if e.Cause == nil || e.Primitive != "lock" || e.Name != "events-renewal" {
		t.Fatalf("renewal failure reported as %+v", e)
	}
	if lost := r.await(t, redisync.EventLost); !errors.Is(lost.Cause, redisync.ErrLost) {
		t.Fatalf("lost event %+v: want ErrLost", lost)
	}
	if log := r.log(); !strings.Contains(log, "renewal failed") {
		t.Fatalf("the failed renewal was not logged: %q", log)
	}
	if err := tg.Servers[0].Resume(); err != nil {
		t.Fatal(err)
	}
	// The hold's ctx is kept to the end, as a holder keeps it for Unlock: dropped, and only its Done
	// channel waited on, it would be an abandoned hold, no longer renewed.
	// Unlock then clears what may be left of it in Redis (the key may outlive the client's reckoning
	// by the drift allowance).
	if err := l.Unlock(held); err != nil && !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Unlock of the lost hold = %v", err)
	}
}

// Killing the notifier's connection while a waiter waits is reported once it has subscribed again,
// and logged.
func TestEventsReconnected(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		holder := newLock(t, tg.Client(t), "events-reconnect")
		held, err := holder.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var r recorder
		c := tg.Client(t, append(r.options(), slow)...)
		waiter := newLock(t, c, "events-reconnect")
		got := testkit.Background(func() (context.Context, error) { return waiter.Lock(context.Background()) })
		n, channel := core.Of(c).Notifier(), "redisson_lock__channel:{events-reconnect}"
		testkit.Eventually(t, 10*time.Second, func() error {
			if n.Waiting(channel) == 0 || !n.Subscribed(channel) {
				return errors.New("no waiter parked on " + channel)
			}
			return nil
		})
		for _, s := range tg.Servers {
			if _, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
				t.Fatal(err)
			}
		}
		e := r.await(t, redisync.EventReconnected)
		if e.Channels < 1 || e.Primitive != "" {
			t.Fatalf("reconnect reported as %+v: want at least one channel", e)
		}
		if log := r.log(); !strings.Contains(log, "subscribed again") {
			t.Fatalf("the reconnect was not logged: %q", log)
		}
		if err := holder.Unlock(held); err != nil {
			t.Fatal(err)
		}
		if err := waiter.Unlock(testkit.Await(t, got, "waiter")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEventsAbandoned(t *testing.T) {
	tg := testkit.Standalone(t)
	var r recorder
	// A watchdog of 6 s renews every 2 s: a round that a busy machine held up past a third of a
	// second would have logged a failed renewal.
	l := newLock(t, tg.Client(t, append(r.options(), redisync.WithWatchdogTimeout(6*time.Second))...), "events-abandoned")
	func() {
		if _, err := l.Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}() // the hold's ctx is dropped here
	testkit.Eventually(t, 20*time.Second, func() error {
		runtime.GC()
		if r.count(redisync.EventAbandoned) == 0 {
			return errors.New("no abandoned event yet")
		}
		return nil
	})
	if e := r.await(t, redisync.EventAbandoned); e.Held <= 0 || e.Name != "events-abandoned" {
		t.Fatalf("abandoned event %+v", e)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if locked, err := l.IsLocked(context.Background()); err != nil || locked {
			return fmt.Errorf("the abandoned lock is still held (%v)", err)
		}
		return nil
	})
	// When its lease may have ended, the hold is reported for what happened to it: nothing failed.
	if e := r.await(t, redisync.EventLost); !strings.Contains(e.Cause.Error(), "abandoned without Unlock") {
		t.Fatalf("lost event of the abandoned hold: cause %q", e.Cause)
	}
	if log := r.log(); strings.Contains(log, "renewal failed") || !strings.Contains(log, "abandoned without Unlock") {
		t.Fatalf("the abandoned hold's end is logged as %q", log)
	}
}

// Close ends the holds it leaves: reported lost with ErrClosed, and not logged as a loss.
func TestEventsClose(t *testing.T) {
	tg := testkit.Standalone(t)
	var r recorder
	c := tg.Client(t, r.options()...)
	l := newLock(t, c, "events-close", rlock.WithLease(10*time.Second))
	if _, err := l.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if e := r.await(t, redisync.EventLost); !errors.Is(e.Cause, redisync.ErrClosed) {
		t.Fatalf("lost event %+v: want ErrClosed", e)
	}
	if strings.Contains(r.log(), "hold lost") {
		t.Fatalf("Close logged as a loss: %q", r.log())
	}
	testkit.Do(t, tg.Redis(t), "DEL", "events-close")
}

// kinds returns the kinds of the events reported so far, in order.
func (r *recorder) kinds() []redisync.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]redisync.EventKind, len(r.events))
	for i, e := range r.events {
		out[i] = e.Kind
	}
	return out
}

// An acquisition that gives up at its wait bound is reported not acquired, having waited when the
// bound let it; one on a key of another kind is reported failed with Redis's error.
func TestEventsNotAcquiredAndFailed(t *testing.T) {
	tg := testkit.Standalone(t)
	holder := newLock(t, tg.Client(t), "events-busy")
	held, err := holder.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(held)
	var r recorder
	c := tg.Client(t, r.options()...)
	l := newLock(t, c, "events-busy")
	if _, err := l.TryLock(context.Background(), 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock(0) = %v", err)
	}
	if _, err := l.TryLock(context.Background(), 100*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock(100ms) = %v", err)
	}
	want := []redisync.EventKind{redisync.EventNotAcquired, redisync.EventWaiting, redisync.EventNotAcquired}
	if got := r.kinds(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	r.mu.Lock()
	refused, timedOut := r.events[0], r.events[2]
	r.mu.Unlock()
	if refused.Waited || refused.Name != "events-busy" || refused.Primitive != "lock" {
		t.Errorf("single try reported %+v: want not acquired without waiting", refused)
	}
	if !timedOut.Waited || timedOut.Wait < 100*time.Millisecond {
		t.Errorf("bounded wait reported %+v: want not acquired after waiting its bound", timedOut)
	}

	testkit.Do(t, tg.Redis(t), "SET", "events-string", "x")
	defer testkit.Do(t, tg.Redis(t), "DEL", "events-string")
	if _, err := newLock(t, c, "events-string").Lock(context.Background()); err == nil {
		t.Fatal("a lock on a string was acquired")
	}
	e := r.await(t, redisync.EventFailed)
	if e.Cause == nil || !strings.Contains(e.Cause.Error(), "WRONGTYPE") || e.Waited || e.Name != "events-string" {
		t.Fatalf("failed acquisition reported %+v: want Redis's WRONGTYPE", e)
	}
}

// Every acquisition is ended by exactly one event's Ended: released, lost (every acquisition of
// the hold at once), or abandoned.
func TestEventsEnded(t *testing.T) {
	tg := testkit.Standalone(t)
	var r recorder
	// Renewed every 2 s: a lock deleted under its holder is found gone that soon, and a round that
	// a busy machine holds up does not lose the hold before the test deletes it.
	l := newLock(t, tg.Client(t, append(r.options(), redisync.WithWatchdogTimeout(6*time.Second))...), "events-ended")
	held, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Lock(held)
	if err != nil {
		t.Fatal(err)
	}
	third, err := l.Lock(again)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(third); err != nil {
		t.Fatal(err)
	}
	testkit.Do(t, tg.Redis(t), "DEL", "events-ended")
	e := r.await(t, redisync.EventLost)
	if e.Ended != 2 {
		t.Errorf("lost event %+v: want the 2 acquisitions left ended", e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	held0 := 0
	for _, e := range r.events {
		switch e.Kind {
		case redisync.EventAcquired:
			held0++
		case redisync.EventReleased, redisync.EventLost, redisync.EventAbandoned:
			held0 -= e.Ended
		}
	}
	if held0 != 0 {
		t.Fatalf("acquisitions held by the events' count: %d, want 0\n%v", held0, r.events)
	}
	_ = l.Unlock(again)
}
