package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

func init() {
	extraBenchmarks = append(extraBenchmarks, struct {
		id  string
		run func(r *run) []*table
	}{"B14", (*run).b14})
}

var (
	mBurstMax = metric{name: "burst_gap_max_ms", head: "longest gap ms", ratio: true}
	mBurst50  = metric{name: "burst_gap_p50_ms", head: "burst's longest p50 ms", ratio: true}
	mBurstRT  = metric{name: "burst_gap_max_rtt", head: "longest in RTTs"}
	mBurstN   = metric{name: "acq_per_burst", head: "acq/burst", higher: true}
)

// B14: contention that resumes after an idle spell (a cron tick, a cache stampede): 8 separate
// clients of each library lock one key 10 times each, all starting at once, after the key and the
// clients have been left alone. The figure is the longest time without an acquisition once the burst
// has begun (from its start to the first acquisition, or between two), over every burst.
//
// The spell is 12 s in a full run, longer than anything redisync keeps for a lock's waiters at its
// defaults (a Client's listing among the lock's clients lasts the wait window, 10 s, and the channel's
// linger, 0.5 s); 1.5 s in -quick, which only outlasts the linger. The clients stay connected through
// it, as a service's do.
func (r *run) b14() []*table {
	const clients, per = 8, 10
	idle, bursts := 12*time.Second, 5
	if r.quick {
		idle, bursts = 1500*time.Millisecond, 2
	}
	rtt, err := roundTrip(r.dep)
	if err != nil {
		rtt = r.rtt
	}
	t := newTable("B14", fmt.Sprintf("bursts after an idle spell: 8 separate clients lock one key %d times each, at once, after %v alone", per, idle),
		map[string]any{"deployment": r.dep.name, "clients": clients, "idle_s": idle.Seconds(), "bursts": bursts, "rtt_us": int(us(rtt))},
		mBurstMax, mBurst50, mBurstRT, mBurstN, mGaveUp)
	ls := contenders()
	all, ok := openAll(r.dep, ls, clients, t)
	defer closeAll(all)
	longest := map[string][]time.Duration{}
	acquired := map[string]int64{}
	gaveUp := map[string]int64{}
	last := map[string]time.Time{}
	failed := map[string]error{}
	for b := -1; b < bursts; b++ { // burst -1 warms up: connections dialled, scripts loaded
		for _, l := range ok {
			if failed[l.name] != nil {
				continue
			}
			if at, ok := last[l.name]; ok {
				time.Sleep(time.Until(at.Add(idle)))
			}
			gap, n, gave, err := burst(all[l.name].lockers, "b14:"+l.name, per)
			last[l.name] = time.Now()
			if err != nil {
				failed[l.name] = err
				continue
			}
			if b < 0 {
				continue
			}
			longest[l.name] = append(longest[l.name], gap)
			acquired[l.name] += n
			gaveUp[l.name] += gave
		}
	}
	for _, l := range ok {
		if err := failed[l.name]; err != nil {
			t.note("%s failed: %v", l.name, err)
			continue
		}
		g := longest[l.name]
		if variant(l.name) {
			var each []string
			for _, d := range g {
				each = append(each, fmt.Sprintf("%.2f", us(d)/1000))
			}
			t.note("%s: each burst's longest gap, in order: %s ms", l.name, strings.Join(each, ", "))
		}
		sortDurations(g)
		t.set(l.name, mBurstMax.name, us(g[len(g)-1])/1000)
		t.set(l.name, mBurst50.name, us(percentile(g, .5))/1000)
		t.set(l.name, mBurstRT.name, float64(g[len(g)-1])/float64(rtt))
		t.set(l.name, mBurstN.name, float64(acquired[l.name])/float64(len(g)))
		t.set(l.name, mGaveUp.name, float64(gaveUp[l.name]))
	}
	t.note("longest gap: of every burst, the longest time without an acquisition once it began (to the first acquisition, or between two); burst's longest p50: the median burst's; no critical section (each holder unlocks at once), so a gap is a hand-over or a wait for one")
	if g := t.get("redisync", mBurstRT.name); !isNaN(g) {
		t.expect(g <= 10, "no stall when contention resumes: longest gap <= 10 round trips", "%.1f RTT (%.2f ms, RTT %v us)", g, t.get("redisync", mBurstMax.name), t.params["rtt_us"])
	}
	return []*table{t}
}

// burst has every locker lock key per times, all starting at once, and returns the longest time
// without an acquisition from the start, how many acquisitions there were, and how many Lock calls
// gave up (the harness's bound).
func burst(lockers []locker, key string, per int) (longest time.Duration, n, gaveUpN int64, err error) {
	var (
		mu    sync.Mutex
		times []time.Time
		errs  = make([]error, len(lockers))
		wg    sync.WaitGroup
	)
	start := make(chan struct{})
	ctx := context.Background()
	for i, lk := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for done := 0; done < per; {
				unlock, err := lockWithin(ctx, lk, key, attemptBound)
				at := time.Now()
				if err != nil {
					if gaveUp(err) {
						mu.Lock()
						gaveUpN++
						mu.Unlock()
						continue
					}
					errs[i] = err
					return
				}
				mu.Lock()
				times = append(times, at)
				mu.Unlock()
				done++
				if err := unlock(ctx); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, 0, 0, err
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	prev := began
	for _, at := range times {
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return longest, int64(len(times)), gaveUpN, nil
}
