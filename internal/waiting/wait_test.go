package waiting

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/pubsub"
)

// funcTries is Tries made of funcs.
type funcTries struct {
	try  func(context.Context) (bool, time.Duration, error)
	undo func(context.Context)
}

func (t funcTries) Try(ctx context.Context, _ send.Bounds) (bool, time.Duration, error) {
	return t.try(ctx)
}

func (t funcTries) Undo(ctx context.Context, _ bool) {
	if t.undo != nil {
		t.undo(ctx)
	}
}

// A try that acquired what the replicas did not acknowledge is given back with Undo; a wait tries
// again until its bound ends, and only then returns ErrNotReplicated, whether or not the caller's ctx
// can end; a single try returns it at once. A try acknowledged later acquires.
func TestAcquireGivesBackTryWithError(t *testing.T) {
	cc := newMini(t)
	notReplicated := send.NotReplicated(0, 1)
	for name, ctx := range map[string]context.Context{
		"plain ctx": context.Background(),
		"cancelable ctx": func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			t.Cleanup(cancel)
			return ctx
		}(),
	} {
		for _, wait := range []time.Duration{0, 200 * time.Millisecond} {
			tries, undone := 0, 0
			_, err := cc.Acquire(ctx, "test", "undo", wait, Wait{
				Channel: "undo-test", Weight: 1, Policy: pubsub.WakeOne,
				Tries: funcTries{try: func(context.Context) (bool, time.Duration, error) { tries++; return true, 0, notReplicated },
					undo: func(context.Context) { undone++ }},
			})
			if !errors.Is(err, errs.ErrNotReplicated) {
				t.Fatalf("%s, wait %v: %v, want ErrNotReplicated", name, wait, err)
			}
			if undone != tries || (wait == 0 && tries != 1) || (wait > 0 && tries < 2) {
				t.Fatalf("%s, wait %v: %d tries, Undo ran %d times; want every try given back, and tries again within a wait", name, wait, tries, undone)
			}
		}
		tries, undone := 0, 0
		_, err := cc.Acquire(ctx, "test", "undo", time.Minute, Wait{
			Channel: "undo-test", Weight: 1, Policy: pubsub.WakeOne,
			Tries: funcTries{try: func(context.Context) (bool, time.Duration, error) {
				if tries++; tries < 3 {
					return true, 0, notReplicated
				}
				return true, 0, nil
			}, undo: func(context.Context) { undone++ }},
		})
		if err != nil || tries != 3 || undone != 2 {
			t.Fatalf("%s: a replica that catches up: %v after %d tries and %d give-backs, want acquired at the third, two given back", name, err, tries, undone)
		}
	}
}

// A try that acquires after the caller's ctx ended is given back, and Acquire returns ctx's cause.
// With a deadline near enough for a stalled server to overrun it, Acquire returns at the deadline
// without waiting for the try; otherwise the try runs on the caller's goroutine and the cancellation
// is seen when it returns.
func TestAcquireGivesBackTryAfterCtxEnded(t *testing.T) {
	cc := newMini(t)
	blockingTry := func(entered chan<- struct{}, proceed <-chan struct{}, undone chan<- struct{}) Wait {
		return Wait{
			Channel: "undo-test", Weight: 1, Policy: pubsub.WakeOne,
			Tries: funcTries{try: func(context.Context) (bool, time.Duration, error) {
				entered <- struct{}{}
				<-proceed
				return true, 0, nil
			},
				undo: func(context.Context) { undone <- struct{}{} }},
		}
	}

	// start runs Acquire on ctx in the background with a try that blocks until proceed is closed.
	start := func(ctx context.Context) (entered, proceed, undone chan struct{}, returned chan error) {
		entered, proceed, undone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
		returned = make(chan error, 1)
		go func() {
			_, err := cc.Acquire(ctx, "test", "undo", -1, blockingTry(entered, proceed, undone))
			returned <- err
		}()
		return entered, proceed, undone, returned
	}

	t.Run("near deadline: returns without the try", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		entered, proceed, undone, returned := start(ctx)
		select {
		case err := <-returned:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire: %v, want the deadline", err)
			}
		case <-time.After(10 * time.Second):
			close(proceed)
			t.Fatal("Acquire waited for a try that its deadline had overtaken")
		}
		<-entered
		close(proceed) // the try acquires late...
		select {
		case <-undone: // ...and is given back
		case <-time.After(10 * time.Second):
			t.Fatal("late acquisition not given back")
		}
	})

	for name, mk := range map[string]func() (context.Context, context.CancelFunc){
		"cancel, no deadline": func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		"cancel, far deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := mk()
			defer cancel()
			entered, proceed, undone, returned := start(ctx)
			<-entered
			cancel()
			close(proceed)
			err := <-returned
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire: %v, want the cancellation", err)
			}
			select {
			case <-undone:
			default:
				t.Fatal("Acquire returned before giving back what its try acquired")
			}
		})
	}
}

// A try answered after half the lease may be overtaken before the watchdog's first renewal: it is
// given back and tried again.
func TestAcquireGivesBackLateTry(t *testing.T) {
	cc := newMini(t)
	// The first try's reply is held up for half the lease, so it is late however fast the machine;
	// the lease is long enough that the second, prompt try is not, however busy the machine.
	const lease = time.Second
	tries, undone := 0, 0
	var lateReturned time.Time
	start, err := cc.Acquire(context.Background(), "test", "undo", time.Minute, Wait{
		Channel: "late-try", Weight: 1, Policy: pubsub.WakeOne, Lease: lease,
		Tries: funcTries{try: func(context.Context) (bool, time.Duration, error) {
			tries++
			if tries == 1 {
				time.Sleep(lease / 2) // a reply held up for half the lease
				lateReturned = time.Now()
			}
			return true, 0, nil
		},
			undo: func(context.Context) { undone++ }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tries != 2 || undone != 1 {
		t.Fatalf("%d tries, %d given back; want the late one given back and a second try", tries, undone)
	}
	if start.Before(lateReturned) {
		t.Fatalf("Acquire reported the late try's start")
	}
}

// grants is a Grants that records what Acquire asks of it.
type grants struct {
	claimed chan string
}

func (g *grants) Tag() string { return "me" }
func (g *grants) Claim(token, score int64) bool {
	g.claimed <- strconv.FormatInt(token, 10) + " " + strconv.FormatInt(score, 10)
	return true
}
func (g *grants) Stray(tag, payload string) {}

// A hand-over that comes soon after the waiter's last try is taken as it is; one that comes after half
// the lease goes to a try, which takes it only if it still stands.
func TestAcquireHandOver(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "prompt", true: "late"}[late], func(t *testing.T) {
			m, cc := newMiniServer(t)
			g := &grants{claimed: make(chan string, 1)}
			var tries atomic.Int64
			// A prompt hand-over comes well within half the lease however busy the machine; a late
			// one is published once half the lease has passed since the last try began.
			lease := time.Hour
			if late {
				lease = 200 * time.Millisecond
			}
			done := make(chan error, 1)
			go func() {
				_, err := cc.Acquire(context.Background(), "test", "undo", time.Minute, Wait{
					Channel: "hand", Wake: "hand-me", Grants: g, Weight: 1, Policy: pubsub.WakeOne, Lease: lease,
					Tries: funcTries{try: func(context.Context) (bool, time.Duration, error) {
						return tries.Add(1) > 2, time.Minute, nil // the first two fail: before and after subscribing
					}},
				})
				done <- err
			}()
			for tries.Load() < 2 { // the tries before and after subscribing: Acquire waits after them
				time.Sleep(time.Millisecond)
			}
			if late {
				time.Sleep(lease / 2) // the second try began before it was counted
			}
			m.Publish("hand-me", "@me 7 0")
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			select {
			case p := <-g.claimed:
				if late {
					t.Fatalf("a late hand-over was claimed (%q) without a try", p)
				}
				if tries.Load() != 2 {
					t.Fatalf("%d tries: a prompt hand-over needs none after the wait began", tries.Load())
				}
			default:
				if !late {
					t.Fatal("a prompt hand-over was not claimed")
				}
				if tries.Load() != 3 {
					t.Fatalf("%d tries: a late hand-over must go to one try", tries.Load())
				}
			}
		})
	}
}

// A wait leaves every channel it listened on when it returns, those it subscribed to after its first
// try included: whether its bound passed, its ctx ended, or a try acquired.
func TestWaitLeavesItsChannels(t *testing.T) {
	cc := newMini(t)
	for name, end := range map[string]func() (context.Context, time.Duration, func() (bool, time.Duration, error)){
		"bound": func() (context.Context, time.Duration, func() (bool, time.Duration, error)) {
			return context.Background(), 50 * time.Millisecond, func() (bool, time.Duration, error) { return false, time.Millisecond, nil }
		},
		"ctx": func() (context.Context, time.Duration, func() (bool, time.Duration, error)) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx, -1, func() (bool, time.Duration, error) { return false, time.Millisecond, nil }
		},
		"acquired": func() (context.Context, time.Duration, func() (bool, time.Duration, error)) {
			tries := 0
			return context.Background(), time.Minute, func() (bool, time.Duration, error) { tries++; return tries == 3, time.Millisecond, nil }
		},
	} {
		ctx, wait, try := end()
		_, err := cc.Acquire(ctx, "test", "leave", wait, Wait{Channel: "leave-test", Wake: "leave-wake", Weight: 1, Policy: pubsub.WakeOne,
			Tries: funcTries{try: func(context.Context) (bool, time.Duration, error) { return try() }, undo: func(context.Context) {}}})
		if name == "acquired" && err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := cc.notifier.Waiters(); n != 0 {
			t.Fatalf("%s: the notifier still has %d waiters after the wait returned (%v)", name, n, err)
		}
	}
}
