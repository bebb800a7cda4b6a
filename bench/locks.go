package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/rlock"
)

var (
	mPairs    = metric{name: "pairs_per_s", head: "pairs/s", higher: true, ratio: true}
	mP50      = metric{name: "p50_us", head: "p50 us", ratio: true}
	mP99      = metric{name: "p99_us", head: "p99 us", ratio: true}
	mRT       = metric{name: "round_trips_per_pair", head: "round trips/pair", ratio: true}
	mSrv      = metric{name: "srv_cmds_per_pair", head: "srv cmds/pair"}
	mAllocs   = metric{name: "allocs_per_pair", head: "allocs/pair", ratio: true}
	mSrvCPU   = metric{name: "srv_cpu_us_per_pair", head: "srv CPU us/pair", ratio: true}
	mOverlaps = metric{name: "overlaps", head: "overlaps"}
)

// B1: uncontended Lock+Unlock, one goroutine, a fresh key each time.
func (r *run) b1() *table {
	t := newTable("B1", "uncontended Lock+Unlock, 1 goroutine, fresh key each time", map[string]any{"deployment": r.dep.name},
		mPairs, mP50, mP99, mRT, mSrv, mSrvCPU, mCapPairs, mAllocs, mOverlaps, mKeys, mMem)
	all, ls := openAll(r.dep, libs, 1, t)
	defer closeAll(all)
	accs := map[string]*acc{}
	secs := map[string]*section{}
	failed := r.interleave(ls, func(rep int, l *lib) error {
		o := all[l.name]
		a, sec := accs[l.name], secs[l.name]
		if a == nil {
			a, sec = &acc{}, &section{}
			accs[l.name], secs[l.name] = a, sec
			if err := serialPairs(o.lockers[0], "b1:warm:"+l.name+":", r.slice/5, sec, nil); err != nil {
				return err
			}
		}
		w := openWindow(r.dep, o.n)
		if err := serialPairs(o.lockers[0], fmt.Sprintf("b1:%s:%d:", l.name, rep), r.slice, sec, &a.lat); err != nil {
			return err
		}
		return a.add(w, int64(len(a.lat))-a.ops)
	})
	overlaps := map[string]int64{}
	for _, l := range ls {
		if err := failed[l.name]; err != nil {
			t.note("%s failed: %v", l.name, err)
			continue
		}
		a := accs[l.name]
		sortDurations(a.lat)
		t.set(l.name, mPairs.name, a.rate())
		t.set(l.name, mP50.name, us(percentile(a.lat, .5)))
		t.set(l.name, mP99.name, us(percentile(a.lat, .99)))
		t.set(l.name, mRT.name, a.perOp(a.cmds))
		t.set(l.name, mSrv.name, a.perOp(a.srv.calls))
		t.set(l.name, mSrvCPU.name, us(a.srv.cpu)/float64(a.ops))
		t.set(l.name, mCapPairs.name, perCore(a.ops, a.srv.cpu))
		t.set(l.name, mAllocs.name, float64(a.mallocs)/float64(a.ops))
		overlaps[l.name] = secs[l.name].overlaps.Load()
		t.set(l.name, mOverlaps.name, float64(overlaps[l.name]))
		a.leftovers(t, l.name)
	}
	leftoversNote(t, ls, accs)
	r.checkExclusion(t, "", overlaps)
	t.note("round trips/pair: commands the library's client sent (a script is one); srv cmds/pair: the server's INFO commandstats delta, which also counts every call a script makes")
	t.note("allocs/pair: the whole process's mallocs during the slice, harness included (see rlock's BenchmarkLockUnlock for the library alone)")
	floor, rs := t.get("floor", mPairs.name), t.get("redisync", mPairs.name)
	t.expect(rs >= 0.9*floor, "pairs/s >= 0.9x floor", "%.2fx", rs/floor)
	bestName, best := t.best(mPairs)
	t.expect(rs > best, "ahead of every peer", "%.2fx %s", rs/best, bestName)
	rt := t.get("redisync", mRT.name)
	t.expect(rt <= 2.001, "<= 2 round trips per pair", "%.2f", rt)
	al, ral := t.get("redisync", mAllocs.name), t.get("rueidislock", mAllocs.name)
	t.expect(al < ral, "allocs per pair below rueidislock's", "%.0f vs %.0f", al, ral)
	return t
}

// serialPairs locks and unlocks fresh keys one after the other for d, appending each pair's time to
// lat (when not nil).
func serialPairs(lk locker, prefix string, d time.Duration, sec *section, lat *[]time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	end := time.Now().Add(d)
	for i := 0; ; i++ {
		start := time.Now()
		if !start.Before(end) {
			return nil
		}
		unlock, err := lk.Lock(ctx, prefix+strconv.Itoa(i))
		if err != nil {
			return err
		}
		sec.enter()
		sec.leave()
		if err := unlock(ctx); err != nil {
			return err
		}
		if lat != nil {
			*lat = append(*lat, time.Since(start))
		}
	}
}

// B2: reentrant Lock, Lock, Unlock, Unlock; only redisync has re-entry, so it is compared with its own
// B1 pair.
func (r *run) b2(b1 *table) *table {
	t := newTable("B2", "reentrant Lock,Lock,Unlock,Unlock (redisync only: no peer has re-entry)", map[string]any{"deployment": r.dep.name},
		mPairs, mP50, mP99, mRT, mSrv, mOverlaps)
	t.noRatios = true
	var n atomic.Int64
	lk, err := openRedisync(r.dep, &n)
	if err != nil {
		t.note("redisync: %v", err)
		return t
	}
	defer lk.Close()
	c := lk.(*redisyncLocker).c
	a := &acc{}
	var sec section
	nested := func(prefix string, d time.Duration, lat *[]time.Duration) error {
		ctx := context.Background()
		end := time.Now().Add(d)
		for i := 0; ; i++ {
			start := time.Now()
			if !start.Before(end) {
				return nil
			}
			l, err := rlock.New(c, prefix+strconv.Itoa(i))
			if err != nil {
				return err
			}
			outer, err := l.Lock(ctx)
			if err != nil {
				return err
			}
			sec.enter()
			inner, err := l.Lock(outer)
			if err != nil {
				return err
			}
			if err := l.Unlock(inner); err != nil {
				return err
			}
			sec.leave()
			if err := l.Unlock(outer); err != nil {
				return err
			}
			if lat != nil {
				*lat = append(*lat, time.Since(start))
			}
		}
	}
	if err := nested("b2:warm:", r.slice/5, nil); err != nil {
		t.note("redisync: %v", err)
		return t
	}
	for rep := 0; rep < r.reps; rep++ {
		w := openWindow(r.dep, &n)
		if err := nested(fmt.Sprintf("b2:%d:", rep), r.slice, &a.lat); err != nil {
			t.note("redisync: %v", err)
			return t
		}
		if err := a.add(w, int64(len(a.lat))-a.ops); err != nil {
			t.note("redisync: %v", err)
			return t
		}
	}
	sortDurations(a.lat)
	t.set("redisync", mPairs.name, a.rate())
	t.set("redisync", mP50.name, us(percentile(a.lat, .5)))
	t.set("redisync", mP99.name, us(percentile(a.lat, .99)))
	t.set("redisync", mRT.name, a.perOp(a.cmds))
	t.set("redisync", mSrv.name, a.perOp(a.srv.calls))
	t.set("redisync", mOverlaps.name, float64(sec.overlaps.Load()))
	r.checkExclusion(t, "", map[string]int64{"redisync": sec.overlaps.Load()})
	if b1 != nil {
		for _, m := range []metric{mPairs, mP50, mRT} {
			t.set("redisync B1", m.name, b1.get("redisync", m.name))
		}
		extra := t.get("redisync", mRT.name) - b1.get("redisync", mRT.name)
		t.expect(extra <= 2.001, "nested Lock/Unlock cost <= 2 extra round trips", "%.2f extra (B1 pair: %.2f)", extra, b1.get("redisync", mRT.name))
	}
	return t
}

// B3: 50 goroutines, each on its own key, one client.
func (r *run) b3(id string, d *deployment) *table {
	const goroutines = 50
	t := newTable(id, "50 goroutines, distinct keys, one client", map[string]any{"deployment": d.name, "goroutines": goroutines},
		mPairs, mP50, mP99, mRT, mSrv, mSrvCPU, mCapPairs, mOverlaps, mKeys, mMem)
	all, ls := openAll(d, append(slices.Clone(libs), variants...), 1, t)
	defer closeAll(all)
	accs := map[string]*acc{}
	overlaps := map[string]int64{}
	failed := r.interleave(ls, func(rep int, l *lib) error {
		o := all[l.name]
		a := accs[l.name]
		if a == nil {
			a = &acc{}
			accs[l.name] = a
			if _, err := parallelPairs(o.lockers[0], fmt.Sprintf("%s:warm:%s", id, l.name), goroutines, r.slice/5); err != nil {
				return err
			}
		}
		w := openWindow(d, o.n)
		res, err := parallelPairs(o.lockers[0], fmt.Sprintf("%s:%s:%d", id, l.name, rep), goroutines, r.slice)
		if err != nil {
			return err
		}
		w.close() // before merging the latencies
		a.lat = append(a.lat, res.lat...)
		overlaps[l.name] += res.overlaps
		return a.add(w, int64(len(res.lat)))
	})
	for _, l := range ls {
		if err := failed[l.name]; err != nil {
			t.note("%s failed: %v", l.name, err)
			continue
		}
		a := accs[l.name]
		sortDurations(a.lat)
		t.set(l.name, mPairs.name, a.rate())
		t.set(l.name, mP50.name, us(percentile(a.lat, .5)))
		t.set(l.name, mP99.name, us(percentile(a.lat, .99)))
		t.set(l.name, mRT.name, a.perOp(a.cmds))
		t.set(l.name, mSrv.name, a.perOp(a.srv.calls))
		t.set(l.name, mSrvCPU.name, us(a.srv.cpu)/float64(a.ops))
		t.set(l.name, mCapPairs.name, perCore(a.ops, a.srv.cpu))
		t.set(l.name, mOverlaps.name, float64(overlaps[l.name]))
		a.leftovers(t, l.name)
	}
	leftoversNote(t, ls, accs)
	r.checkExclusion(t, "", overlaps)
	floor, rs := t.get("floor", mPairs.name), t.get("redisync", mPairs.name)
	t.expect(rs >= 0.9*floor, "pairs/s >= 0.9x floor", "%.2fx", rs/floor)
	if v := t.get("rueidislock", mPairs.name); !isNaN(v) {
		t.expect(rs >= 1.2*v, "pairs/s >= 1.2x rueidislock", "%.2fx", rs/v)
	}
	if v := t.get("redsync", mPairs.name); !isNaN(v) {
		t.expect(rs >= 2*v, "pairs/s >= 2x redsync", "%.2fx", rs/v)
	}
	return t
}

type parallelResult struct {
	lat      []time.Duration
	overlaps int64
}

// parallelPairs runs k goroutines for d, each locking and unlocking its own key.
func parallelPairs(lk locker, prefix string, k int, d time.Duration) (parallelResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	end := time.Now().Add(d)
	lats := make([][]time.Duration, k)
	secs := make([]section, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for g := 0; g < k; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := prefix + ":" + strconv.Itoa(g)
			for {
				start := time.Now()
				if !start.Before(end) {
					return
				}
				unlock, err := lk.Lock(ctx, key)
				if err != nil {
					errs[g] = err
					return
				}
				secs[g].enter()
				secs[g].leave()
				if err := unlock(ctx); err != nil {
					errs[g] = err
					return
				}
				lats[g] = append(lats[g], time.Since(start))
			}
		}()
	}
	wg.Wait()
	var res parallelResult
	for g := range lats {
		if errs[g] != nil {
			return res, errs[g]
		}
		res.lat = append(res.lat, lats[g]...)
		res.overlaps += secs[g].overlaps.Load()
	}
	return res, nil
}
