package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

var (
	mRenewPer100 = metric{name: "renew_cmds_per_100_locks_per_period", head: "cmds/100 locks/period", ratio: true}
	mRenewCmds   = metric{name: "renew_cmds_per_period", head: "cmds/period", ratio: true}
	mPeriod      = metric{name: "period_s", head: "period s"}
	mRedisCPU    = metric{name: "redis_cpu_pct", head: "redis CPU %", ratio: true}
	mGoPerLock   = metric{name: "goroutines_per_lock", head: "goroutines/lock", ratio: true}
	mLost        = metric{name: "lost", head: "lost"}
)

func init() {
	extraBenchmarks = append(extraBenchmarks, struct {
		id  string
		run func(r *run) []*table
	}{"B9", func(r *run) []*table { return []*table{r.b9()} }})
}

// B9: many locks held for a long time: what keeping them costs. Only redisync and rueidislock renew;
// redsync and bsm/redislock have no renewal (their leases simply expire).
func (r *run) b9() *table {
	const locks = 10000
	hold := 60 * time.Second
	wd := 30 * time.Second // redisync's default watchdog timeout
	if r.quick {
		hold, wd = 4*time.Second, 3*time.Second
	}
	t := newTable("B9", fmt.Sprintf("watchdog: %d locks held for %v", locks, hold), map[string]any{"deployment": r.dep.name, "locks": locks, "hold_s": hold.Seconds()},
		mRenewPer100, mRenewCmds, mPeriod, mRedisCPU, mGoPerLock, mLost)
	t.note("redisync: watchdog timeout %v (renewal every %v); rueidislock: KeyValidity 5 s, one extension per lock every 2.5 s (its defaults); redsync, bsm: no renewal", wd, wd/3)
	type held struct{ unlocks []func(context.Context) error }
	run := func(name string, period time.Duration, open func(n *atomic.Int64) (locker, error), key func(i int) string) {
		var n atomic.Int64
		lk, err := open(&n)
		if err != nil {
			t.note("%s: %v", name, err)
			return
		}
		defer lk.Close()
		runtime.GC()
		g0 := runtime.NumGoroutine()
		h := &held{unlocks: make([]func(context.Context) error, locks)}
		var wg sync.WaitGroup
		var firstErr atomic.Value
		sem := make(chan struct{}, 64)
		for i := 0; i < locks; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// The acquisition is bounded, the hold is not: rueidislock ties a hold to the ctx it
				// was taken with, and sometimes never answers under this load (see bench/README.md).
				ctx, cancel := context.WithCancel(context.Background())
				bound := time.AfterFunc(30*time.Second, cancel)
				unlock, err := lk.Lock(ctx, "b9:"+name+":"+strconv.Itoa(i))
				if !bound.Stop() && err == nil {
					h.unlocks[i] = unlock // released with the others
					err = fmt.Errorf("no answer within the harness's 30 s bound")
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				h.unlocks[i] = unlock
			}()
		}
		wg.Wait()
		defer func() {
			for _, u := range h.unlocks {
				if u != nil {
					u(context.Background())
				}
			}
		}()
		if err, _ := firstErr.Load().(error); err != nil {
			t.note("%s: %v", name, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
		goroutines := runtime.NumGoroutine() - g0
		w := openWindow(r.dep, &n)
		time.Sleep(hold)
		w.close()
		if w.err != nil {
			t.note("%s: %v", name, w.err)
			return
		}
		periods := hold.Seconds() / period.Seconds()
		cmds := float64(w.c1 - w.c0)
		t.set(name, mRenewCmds.name, cmds/periods)
		t.set(name, mRenewPer100.name, cmds/periods/(locks/100))
		t.set(name, mPeriod.name, period.Seconds())
		t.set(name, mRedisCPU.name, 100*float64(w.s1.cpu-w.s0.cpu)/float64(hold))
		t.set(name, mGoPerLock.name, float64(goroutines)/locks)
		keys := make([]string, locks)
		for i := range keys {
			keys[i] = key(i)
		}
		alive, err := existing(r.dep, keys)
		if err != nil {
			t.note("%s: %v", name, err)
			return
		}
		t.set(name, mLost.name, float64(locks-alive))
	}
	run("redisync", wd/3, func(n *atomic.Int64) (locker, error) {
		return openRedisync(r.dep, n, redisync.WithWatchdogTimeout(wd))
	}, func(i int) string { return "b9:redisync:" + strconv.Itoa(i) })
	run("rueidislock", 2500*time.Millisecond, func(n *atomic.Int64) (locker, error) {
		return openRueidislock(r.dep, n)
	}, func(i int) string { return "rueidislock:0:b9:rueidislock:" + strconv.Itoa(i) })
	c := t.get("redisync", mRenewPer100.name)
	t.expect(c <= 1, "<= 1 Redis command per 100 held locks per period", "%.2f", c)
	g := t.get("redisync", mGoPerLock.name)
	t.expect(g < 0.01, "no goroutine per held lock", "%.4f goroutines per lock", g)
	return t
}

// existing counts the keys that still exist.
func existing(d *deployment, keys []string) (int, error) {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs, DisableCache: true})
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	cmds := make(rueidis.Commands, 0, len(keys))
	for _, k := range keys {
		cmds = append(cmds, rdb.B().Exists().Key(k).Build())
	}
	n := 0
	for _, res := range rdb.DoMulti(context.Background(), cmds...) {
		v, err := res.AsInt64()
		if err != nil {
			return 0, err
		}
		n += int(v)
	}
	return n, nil
}
