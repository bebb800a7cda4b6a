package reliability

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

func TestLinearizableRWLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		clients := []*redisync.Client{tg.Client(t), tg.Client(t), tg.Client(t)}
		names := []string{"lin-rw-a", "lin-rw-b"}
		rec := NewRecorder()
		var writers, readers [2]atomic.Int64
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				for r := range 25 {
					k := (w + r) % len(names)
					rw, err := rwlock.New(clients[w%len(clients)], names[k])
					if err != nil {
						t.Error(err)
						return
					}
					write := (w+r)%3 == 0
					l, lockOp, unlockOp := rw.ReadLock(), RLock, RUnlock
					if write {
						l, lockOp, unlockOp = rw.WriteLock(), Lock, Unlock
					}
					in := Input{Name: names[k], Owner: w + 1}
					var held context.Context
					in.Op = lockOp
					if err := rec.Do(w, in, func() (err error) { held, err = l.Lock(context.Background()); return err }); err != nil {
						t.Error(err)
						return
					}
					if write {
						if writers[k].Add(1) > 1 || readers[k].Load() > 0 {
							t.Errorf("%s: a writer inside with others", names[k])
						}
					} else if readers[k].Add(1); writers[k].Load() > 0 {
						t.Errorf("%s: a reader inside with a writer", names[k])
					}
					brief(w)
					if write {
						writers[k].Add(-1)
					} else {
						readers[k].Add(-1)
					}
					in.Op = unlockOp
					if err := rec.Do(w, in, func() error { return l.Unlock(held) }); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		requireResult(t, rec, RWModel, porcupine.Ok)
	})
}

func TestLinearizableMultiLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		clients := []*redisync.Client{tg.Client(t), tg.Client(t), tg.Client(t)}
		rec := NewRecorder()
		// Two overlapping pairs: holding {a,b} must exclude {b,c} and {a,b}.
		pairs := [][]string{{"lin-ml-a", "lin-ml-b"}, {"lin-ml-b", "lin-ml-c"}}
		contend(t, rec, 6, 20, func(w int, name string) exclusive {
			var locks []multilock.Locker
			for _, n := range pairs[w%2] {
				l, err := rlock.New(clients[w%len(clients)], n)
				if err != nil {
					t.Fatal(err)
				}
				locks = append(locks, l)
			}
			m, err := multilock.New(locks...)
			if err != nil {
				t.Fatal(err)
			}
			return recordEach{m, pairs[w%2], rec, w}
		}, []string{"pair"}, brief)
		requireResult(t, rec, MutexModel, porcupine.Ok)
	})
}

// recordEach records a MultiLock's acquisition and release as one on every lock it covers, so the
// history is checked per underlying lock; contend's own record of the "pair" is checked too.
type recordEach struct {
	m     *multilock.MultiLock
	names []string
	rec   *Recorder
	w     int
}

func (r recordEach) Lock(ctx context.Context) (context.Context, error) {
	var held context.Context
	err := r.rec.DoEach(r.w, r.names, Lock, func() (err error) { held, err = r.m.Lock(ctx); return err })
	return held, err
}

func (r recordEach) Unlock(ctx context.Context) error {
	return r.rec.DoEach(r.w, r.names, Unlock, func() error { return r.m.Unlock(ctx) })
}
