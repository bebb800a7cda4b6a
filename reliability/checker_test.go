package reliability

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// checkTimeout bounds one porcupine check; the histories here take milliseconds.
const checkTimeout = time.Minute

// exclusive is what the mutex workload needs of a lock.
type exclusive interface {
	Lock(ctx context.Context) (context.Context, error)
	Unlock(ctx context.Context) error
}

// contend runs workers goroutines spread over clients, each doing rounds of Lock / work / Unlock on
// one of names, and records every acquisition and release. enter runs inside the critical section.
func contend(t *testing.T, rec *Recorder, workers, rounds int, lockFor func(worker int, name string) exclusive, names []string, enter func(worker int)) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			owner := w + 1
			for r := range rounds {
				name := names[(w+r)%len(names)]
				l := lockFor(w, name)
				var held context.Context
				err := rec.Do(w, Input{Name: name, Owner: owner, Op: Lock}, func() (err error) {
					held, err = l.Lock(context.Background())
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
				enter(w)
				if err := rec.Do(w, Input{Name: name, Owner: owner, Op: Unlock}, func() error { return l.Unlock(held) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func brief(int) { time.Sleep(200 * time.Microsecond) }

func requireResult(t *testing.T, rec *Recorder, model porcupine.Model, want porcupine.CheckResult) {
	t.Helper()
	if rec.Len() == 0 {
		t.Fatal("empty history")
	}
	if got := rec.Check(model, checkTimeout); got != want {
		t.Fatalf("history of %d operations: %s, want %s", rec.Len(), got, want)
	}
	t.Logf("history of %d operations: %s", rec.Len(), want)
}

func TestLinearizableRLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		clients := []*redisync.Client{tg.Client(t), tg.Client(t), tg.Client(t)}
		names := []string{"lin-rlock-a", "lin-rlock-b"}
		rec := NewRecorder()
		contend(t, rec, 6, 40, func(w int, name string) exclusive {
			l, err := rlock.New(clients[w%len(clients)], name)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, names, brief)
		requireResult(t, rec, MutexModel, porcupine.Ok)
	})
}

func TestLinearizableFairLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		clients := []*redisync.Client{tg.Client(t), tg.Client(t), tg.Client(t)}
		names := []string{"lin-fair-a", "lin-fair-b"}
		rec := NewRecorder()
		contend(t, rec, 6, 30, func(w int, name string) exclusive {
			l, err := fairlock.New(clients[w%len(clients)], name)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, names, brief)
		requireResult(t, rec, MutexModel, porcupine.Ok)
	})
}

// TestFairLockGrantsInQueueOrder queues waiters one after another behind a holder and checks that
// they are granted the lock in that order, across clients.
func TestFairLockGrantsInQueueOrder(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const waiters = 5
		clients := []*redisync.Client{tg.Client(t), tg.Client(t)}
		lockOn := func(i int) *fairlock.Lock {
			l, err := fairlock.New(clients[i%len(clients)], "fifo")
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		holder := lockOn(0)
		held, err := holder.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := 1; i <= waiters; i++ {
			l := lockOn(i)
			wg.Go(func() {
				ctx, err := l.Lock(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
				}
			})
			// The next waiter starts only once this one is queued.
			testkit.Eventually(t, 5*time.Second, func() error {
				n, err := holder.Waiting(context.Background())
				if err == nil && n != i {
					err = fmt.Errorf("%d queued, want %d", n, i)
				}
				return err
			})
		}
		if err := holder.Unlock(held); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, got := range order {
			if got != i+1 {
				t.Fatalf("grant order %v, want 1..%d", order, waiters)
			}
		}
		if len(order) != waiters {
			t.Fatalf("%d of %d waiters granted", len(order), waiters)
		}
	})
}

func TestLinearizableSemaphore(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const permits = 3
		clients := []*redisync.Client{tg.Client(t), tg.Client(t), tg.Client(t)}
		name := "lin-sem"
		s0, err := semaphore.New(clients[0], name)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s0.TrySetPermits(context.Background(), permits); err != nil || !ok {
			t.Fatalf("TrySetPermits: %v %v", ok, err)
		}
		t.Cleanup(func() { testkit.Do(t, tg.Redis(t), "DEL", name) })
		rec := NewRecorder()
		var in, most atomic.Int64
		var wg sync.WaitGroup
		for w := range 6 {
			s, err := semaphore.New(clients[w%len(clients)], name)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for r := range 30 {
					n := int64(1 + (w+r)%2)
					if err := rec.Do(w, Input{Name: name, Owner: w + 1, Op: Acquire, N: n}, func() error {
						return s.Acquire(context.Background(), n)
					}); err != nil {
						t.Error(err)
						return
					}
					now := in.Add(n)
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
					brief(w)
					in.Add(-n)
					if err := rec.Do(w, Input{Name: name, Owner: w + 1, Op: Release, N: n}, func() error {
						return s.Release(context.Background(), n)
					}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if most.Load() > permits {
			t.Fatalf("%d permits in use at once, only %d exist", most.Load(), permits)
		}
		requireResult(t, rec, SemaphoreModel(permits), porcupine.Ok)
	})
}

// noLock pretends to lock: the control run that shows the checker finds a history without mutual
// exclusion illegal.
type noLock struct{}

func (noLock) Lock(ctx context.Context) (context.Context, error) { return ctx, nil }
func (noLock) Unlock(context.Context) error                      { return nil }

func TestControlWithoutLockIsIllegal(t *testing.T) {
	const workers = 4
	// Every worker's first round waits inside the section until all are in, so the overlap that the
	// checker must find is certain, not a matter of timing.
	var ready sync.WaitGroup
	ready.Add(workers)
	var first [workers]sync.Once
	rec := NewRecorder()
	contend(t, rec, workers, 10, func(int, string) exclusive { return noLock{} }, []string{"control"}, func(w int) {
		first[w].Do(func() {
			ready.Done()
			ready.Wait()
		})
		brief(w)
	})
	requireResult(t, rec, MutexModel, porcupine.Illegal)

	// The same for the semaphore model: more permits out than exist.
	rec = NewRecorder()
	for w := range 3 {
		rec.Do(w, Input{Name: "control", Owner: w + 1, Op: Acquire, N: 1}, func() error { return nil })
	}
	requireResult(t, rec, SemaphoreModel(2), porcupine.Illegal)

	// And the read-write model: a writer inside while a reader holds.
	rec = NewRecorder()
	rec.Do(0, Input{Name: "control", Owner: 1, Op: RLock}, func() error { return nil })
	rec.Do(1, Input{Name: "control", Owner: 2, Op: Lock}, func() error { return nil })
	requireResult(t, rec, RWModel, porcupine.Illegal)
}
