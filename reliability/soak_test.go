package reliability

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

var soakFor = flag.Duration("soak", 4*time.Second, "how long TestSoak runs every primitive under random faults")

// occupancy tracks who is inside each object's critical section. A holder counts as inside from its
// acquisition until it releases or its hold's ctx ends (a lost lease), whichever comes first.
type occupancy struct {
	mu sync.Mutex
	in map[string][]*occupant
}

type occupant struct {
	ctx    context.Context
	shared bool // a reader
}

// enter reports whether entering breaks exclusion: another live holder is inside and either side is
// exclusive. The returned func leaves.
func (o *occupancy) enter(name string, ctx context.Context, shared bool) (bool, func()) {
	me := &occupant{ctx, shared}
	o.mu.Lock()
	defer o.mu.Unlock()
	bad := false
	for _, other := range o.in[name] {
		if other.ctx.Err() == nil && !(shared && other.shared) {
			bad = true
		}
	}
	o.in[name] = append(o.in[name], me)
	return bad, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		list := o.in[name]
		for i, x := range list {
			if x == me {
				o.in[name] = append(list[:i], list[i+1:]...)
				break
			}
		}
	}
}

// TestSoak runs every primitive from several clients for -soak (4 s by default, as part of the
// suite) while a server fault is injected every few hundred milliseconds, and fails on any
// violation: two live holders of an exclusive lock, more permits out than exist, a latch that does
// not open. Faults that end a lease early by design (a clock jump) are left out: only fencing
// protects against those, and TestFaultClockJump covers them.
func TestSoak(t *testing.T) {
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	opts := []redisync.Option{redisync.WithWatchdogTimeout(2 * time.Second), redisync.WithRecheckInterval(time.Second)}
	clients := []*redisync.Client{tg.Client(t, opts...), tg.Client(t, opts...), tg.Client(t, opts...)}
	ctx, stop := context.WithTimeout(context.Background(), *soakFor)
	defer stop()

	tr := startTrace(t, srv.Addr, *soakTrace)
	var ops, faults, errs, violations atomic.Int64
	violation := func(format string, args ...any) {
		violations.Add(1)
		tr.violation(fmt.Sprintf(format, args...))
		t.Errorf("violation: "+format, args...)
	}
	occ := &occupancy{in: map[string][]*occupant{}}
	var wg sync.WaitGroup
	work := func(fn func(w int, c *redisync.Client) error) {
		for w := range 3 {
			c := clients[w]
			wg.Go(func() {
				for ctx.Err() == nil {
					if err := fn(w, c); err != nil {
						errs.Add(1)
						time.Sleep(20 * time.Millisecond) // a fault: do not spin on it
					}
				}
			})
		}
	}
	// hold runs one exclusive or shared hold on name, checking exclusion inside.
	hold := func(name string, shared bool, lock func() (context.Context, error), unlock func(context.Context) error) error {
		start := time.Now()
		held, err := lock()
		if err != nil {
			return err
		}
		tr.logf("%s: %p acquired after %v", name, held, time.Since(start))
		defer tr.logf("%s: %p released", name, held)
		ops.Add(1)
		bad, leave := occ.enter(name, held, shared)
		if bad {
			violation("%s entered while another live holder was inside", name)
		}
		time.Sleep(time.Millisecond)
		leave()
		if err := unlock(held); err != nil && !errors.Is(err, redisync.ErrNotHeld) {
			return err
		}
		return nil
	}
	const wait = 3 * time.Second

	work(func(w int, c *redisync.Client) error {
		l, _ := rlock.New(c, "soak-rlock")
		return hold(l.Name(), false, func() (context.Context, error) { return l.TryLock(ctx, wait) }, l.Unlock)
	})
	work(func(w int, c *redisync.Client) error {
		l, _ := fairlock.New(c, "soak-fair")
		return hold(l.Name(), false, func() (context.Context, error) { return l.TryLock(ctx, wait) }, l.Unlock)
	})
	work(func(w int, c *redisync.Client) error {
		rw, _ := rwlock.New(c, "soak-rw")
		l, shared := rw.ReadLock(), w != 0
		if !shared {
			l = rw.WriteLock()
		}
		return hold(rw.Name(), shared, func() (context.Context, error) { return l.TryLock(ctx, wait) }, l.Unlock)
	})
	work(func(w int, c *redisync.Client) error {
		a, _ := rlock.New(c, "soak-ml-a")
		b, _ := rlock.New(c, "soak-ml-b")
		m, _ := multilock.New(a, b)
		return hold("soak-ml", false, func() (context.Context, error) { return m.TryLock(ctx, wait) }, m.Unlock)
	})
	const permits = 2
	s0, _ := semaphore.New(clients[0], "soak-sem")
	if _, err := s0.TrySetPermits(context.Background(), permits); err != nil {
		t.Fatal(err)
	}
	var out atomic.Int64
	work(func(w int, c *redisync.Client) error {
		s, _ := semaphore.New(c, "soak-sem")
		if err := s.TryAcquire(ctx, 1, wait); err != nil {
			return err
		}
		ops.Add(1)
		if n := out.Add(1); n > permits {
			violation("%d permits out, %d exist", n, permits)
		}
		time.Sleep(time.Millisecond)
		out.Add(-1)
		return s.Release(context.Background(), 1)
	})
	wg.Go(func() { // a latch, opened again and again
		l, _ := countdown.New(clients[1], "soak-latch")
		for round := 0; ctx.Err() == nil; round++ {
			if _, err := l.TrySetCount(ctx, 2); err != nil {
				errs.Add(1)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			opened := make(chan error, 1)
			go func() {
				lw, _ := countdown.New(clients[2], "soak-latch")
				_, err := lw.TryAwait(context.Background(), 10*time.Second)
				opened <- err
			}()
			for l.CountDown(context.Background()) != nil || func() bool { n, _ := l.Count(context.Background()); return n > 0 }() {
				time.Sleep(10 * time.Millisecond)
			}
			ops.Add(1)
			if err := <-opened; err != nil {
				errs.Add(1)
			}
		}
	})

	// The faults.
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(300+rand.IntN(400)) * time.Millisecond):
			}
			faults.Add(1)
			switch f := rand.IntN(5); f {
			case 0, 1: // a stall shorter than the TTL; one longer: leases end, holders must learn it first
				d := 2500 * time.Millisecond
				if f == 0 {
					d = time.Duration(200+rand.IntN(800)) * time.Millisecond
				}
				tr.logf("fault: server stopped for %v", d)
				srv.Pause()
				time.Sleep(d)
				srv.Resume()
				tr.logf("fault: server resumed")
			case 2:
				tr.logf("fault: CLIENT KILL TYPE pubsub")
				srv.Do("CLIENT", "KILL", "TYPE", "pubsub")
			case 3:
				tr.logf("fault: CLIENT PAUSE 400 WRITE")
				srv.Do("CLIENT", "PAUSE", "400", "WRITE")
			case 4:
				tr.logf("fault: DEBUG SLEEP 0.4")
				go srv.Do("DEBUG", "SLEEP", "0.4")
			}
		}
	})
	wg.Wait()
	summary := fmt.Sprintf("soak %v: %d operations, %d faults injected, %d operations failed under faults, %d violations",
		*soakFor, ops.Load(), faults.Load(), errs.Load(), violations.Load())
	t.Log(summary)
	if ops.Load() == 0 || faults.Load() == 0 {
		t.Fatalf("%s: nothing was exercised", summary)
	}
	// Leave the server as the clients' cleanup expects it: answering.
	srv.Resume()
	// Not a violation: a fault that cuts the connection while an acquisition runs may leave its
	// permits taken with nobody holding them (see semaphore.Acquire).
	actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := s0.Available(actx); err == nil {
		t.Logf("semaphore: %d of %d permits available at the end", n, permits)
	}
}

// TestOccupancyDetectsOverlap shows that the soak's check can fail: two live exclusive holders are
// caught, readers together are not, and a holder whose ctx has ended (a lost lease) no longer counts.
func TestOccupancyDetectsOverlap(t *testing.T) {
	occ := &occupancy{in: map[string][]*occupant{}}
	live := context.Background()
	if bad, _ := occ.enter("x", live, false); bad {
		t.Fatal("first holder flagged")
	}
	if bad, _ := occ.enter("x", live, false); !bad {
		t.Fatal("second live exclusive holder not flagged")
	}
	if bad, _ := occ.enter("r", live, true); bad {
		t.Fatal("first reader flagged")
	}
	if bad, _ := occ.enter("r", live, true); bad {
		t.Fatal("readers together flagged")
	}
	if bad, _ := occ.enter("r", live, false); !bad {
		t.Fatal("writer among readers not flagged")
	}
	lost, cancel := context.WithCancel(live)
	_, leave := occ.enter("y", lost, false)
	cancel()
	if bad, _ := occ.enter("y", live, false); bad {
		t.Fatal("holder after a lost lease flagged")
	}
	leave()
}
