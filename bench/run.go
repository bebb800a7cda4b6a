package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/redis/rueidis/rueidislock"
	"github.com/redisync/redisync"
)

// run holds what every benchmark of one invocation shares.
type run struct {
	quick  bool
	dep    *deployment
	rtt    time.Duration
	reps   int           // slices per library, interleaved A B A B
	slice  time.Duration // length of one slice
	broken []string      // workloads whose mutual exclusion failed
	// target is the round trip this round's clients see (0: loopback, no proxy); oneWay is what the
	// delay proxies hold every byte each way to make it so; proxies are this round's.
	target, oneWay time.Duration
	proxies        []*proxyProcess
}

// via returns d as this round's clients reach it: over loopback, or through a delay proxy per address
// (see target). Statistics are still read from the servers directly.
func (r *run) via(d *deployment) (*deployment, error) {
	if r.target <= 0 {
		return d, nil
	}
	if d.cluster {
		return nil, fmt.Errorf("a cluster's nodes announce their own addresses: its clients would go round the delay proxy")
	}
	out := *d
	out.addrs = nil
	for _, a := range d.addrs {
		p, err := startDelayProxy(a, r.oneWay)
		if err != nil {
			return nil, err
		}
		r.proxies = append(r.proxies, p)
		out.addrs = append(out.addrs, p.Addr())
	}
	return &out, nil
}

// calibrate sets r.oneWay so that a PING through the delay proxy to d (a single server) takes r.target
// (its p50): the target, less what the proxy costs by itself and the loopback round trip, halved; then
// corrected once by what a PING through a proxy so set takes.
func (r *run) calibrate(d *deployment, atZero time.Duration) error {
	r.oneWay = max(0, (r.target-atZero)/2)
	for range 2 {
		p, err := startDelayProxy(d.addrs[0], r.oneWay)
		if err != nil {
			return err
		}
		via := *d
		via.addrs = []string{p.Addr()}
		got, err := roundTrip(&via)
		p.Close()
		if err != nil {
			return err
		}
		r.oneWay = max(0, r.oneWay-(got-r.target)/2)
	}
	return nil
}

// closeProxies stops the delay proxies of this round.
func (r *run) closeProxies() {
	for _, p := range r.proxies {
		p.Close()
	}
	r.proxies = nil
}

// Capacity: what one core of the server carries, from the CPU the server used (INFO's used_cpu_sys
// and used_cpu_user) over the same window as the operations counted.
var (
	mCapPairs = metric{name: "pairs_per_core_s", head: "pairs/s per core", higher: true, ratio: true}
	mCapAcq   = metric{name: "acq_per_core_s", head: "acq/s per core", higher: true, ratio: true}
)

// perCore returns how many of ops one second of the servers' CPU carried.
func perCore(ops int64, cpu time.Duration) float64 {
	if cpu <= 0 || ops <= 0 {
		return math.NaN()
	}
	return float64(ops) / cpu.Seconds()
}

// section counts holders that overlap inside a critical section.
type section struct{ in, overlaps atomic.Int64 }

func (s *section) enter() {
	if s.in.Add(1) > 1 {
		s.overlaps.Add(1)
	}
}

func (s *section) leave() { s.in.Add(-1) }

// window measures one slice: elapsed time, commands sent by the library's clients, the servers'
// command calls and CPU, and the process's allocations.
type window struct {
	d      *deployment
	n      *atomic.Int64
	t0, t1 time.Time
	c0, c1 int64
	s0, s1 serverStats
	m0, m1 uint64
	closed bool
	err    error
}

func openWindow(d *deployment, n *atomic.Int64) *window {
	w := &window{d: d, n: n}
	w.s0, w.err = d.stats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.m0 = ms.Mallocs
	w.c0 = n.Load()
	w.t0 = time.Now()
	return w
}

// close ends the window; only the first call counts.
func (w *window) close() {
	if w.closed {
		return
	}
	w.closed = true
	w.t1 = time.Now()
	w.c1 = w.n.Load()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.m1 = ms.Mallocs
	var err error
	w.s1, err = w.d.stats()
	if w.err == nil {
		w.err = err
	}
}

// acc accumulates one library's figures over its slices.
type acc struct {
	ops     int64
	elapsed time.Duration
	cmds    int64
	srv     serverStats
	mallocs uint64
	// keys and used_memory the slices added (end less start), and what the servers held when the
	// last slice ended
	keysAdded, memAdded int64
	slices              int
	keysAfter, memAfter int64
	lat                 []time.Duration // per operation (pair, or wait for an acquisition)
	handoff             []time.Duration
	perOwner            []int64
	overlaps            int64
	gaveUp              int64
	fifo                int64
	// fifoChecked: the library's contenders could stamp their first try (see fifoCheck).
	fifoChecked bool
}

func (a *acc) add(w *window, ops int64) error {
	w.close()
	if w.err != nil {
		return w.err
	}
	a.ops += ops
	a.elapsed += w.t1.Sub(w.t0)
	a.cmds += w.c1 - w.c0
	a.srv.calls += w.s1.calls - w.s0.calls
	a.srv.cpu += w.s1.cpu - w.s0.cpu
	if a.srv.byCmd == nil {
		a.srv.byCmd = map[string]int64{}
	}
	for name, n := range w.s1.byCmd {
		if name != "info" {
			a.srv.byCmd[name] += n - w.s0.byCmd[name]
		}
	}
	a.mallocs += w.m1 - w.m0
	a.keysAdded += w.s1.keys - w.s0.keys
	a.memAdded += w.s1.mem - w.s0.mem
	a.slices++
	a.keysAfter, a.memAfter = w.s1.keys, w.s1.mem
	return nil
}

var (
	mKeys = metric{name: "keys_added_per_slice", head: "keys +/slice"}
	mMem  = metric{name: "used_mb_added_per_slice", head: "MB +/slice"}
)

// leftovers sets what lib's slices left in Redis: keys and used_memory added per slice.
func (a *acc) leftovers(t *table, lib string) {
	if a.slices == 0 {
		return
	}
	t.set(lib, mKeys.name, float64(a.keysAdded)/float64(a.slices))
	t.set(lib, mMem.name, float64(a.memAdded)/float64(a.slices)/(1<<20))
}

// leftoversNote prints, for each library, the keys and used_memory in Redis when its last slice ended.
func leftoversNote(t *table, ls []*lib, accs map[string]*acc) {
	var parts []string
	for _, l := range ls {
		if a := accs[l.name]; a != nil && a.slices > 0 {
			parts = append(parts, fmt.Sprintf("%s %d keys %.1f MB", l.name, a.keysAfter, float64(a.memAfter)/(1<<20)))
		}
	}
	if len(parts) > 0 {
		t.note("in Redis when each library's last slice ended: %s; keys +/slice and MB +/slice: added during a slice (end less start)", strings.Join(parts, ", "))
	}
}

// breakdown lists the server's calls per operation by command, the most frequent first.
func (a *acc) breakdown(top int) string {
	type kv struct {
		name string
		n    int64
	}
	var all []kv
	for name, n := range a.srv.byCmd {
		if n > 0 {
			all = append(all, kv{name, n})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var parts []string
	for i, x := range all {
		if i == top {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", x.name, a.perOp(x.n)))
	}
	return strings.Join(parts, ", ")
}

func (a *acc) rate() float64 { return float64(a.ops) / a.elapsed.Seconds() }

func (a *acc) perOp(x int64) float64 { return float64(x) / float64(a.ops) }

// interleave runs fn for each library in turn, r.reps times over (A B C A B C ...), so that the
// drift of a shared machine's load touches every library alike.
func (r *run) interleave(ls []*lib, fn func(rep int, l *lib) error) map[string]error {
	failed := map[string]error{}
	for rep := 0; rep < r.reps; rep++ {
		for _, l := range ls {
			if failed[l.name] != nil {
				continue
			}
			if err := fn(rep, l); err != nil {
				failed[l.name] = err
			}
		}
	}
	return failed
}

// opened is one library's clients for one benchmark.
type opened struct {
	lockers []locker
	n       *atomic.Int64
}

// openAll opens k clients of every library on d; a library that cannot be opened is reported in the
// table and left out.
func openAll(d *deployment, ls []*lib, k int, t *table) (map[string]*opened, []*lib) {
	out := map[string]*opened{}
	var ok []*lib
	for _, l := range ls {
		o := &opened{n: new(atomic.Int64)}
		var err error
		for i := 0; i < k && err == nil; i++ {
			var lk locker
			if lk, err = l.open(d, o.n); err == nil {
				o.lockers = append(o.lockers, lk)
			}
		}
		if err != nil {
			t.note("%s: could not connect: %v", l.name, err)
			o.close()
			continue
		}
		out[l.name] = o
		ok = append(ok, l)
	}
	return out, ok
}

func (o *opened) close() {
	for _, lk := range o.lockers {
		lk.Close()
	}
}

func closeAll(m map[string]*opened) {
	for _, o := range m {
		o.close()
	}
}

// gaveUp reports whether a Lock error is a library giving up on a contended key (a wait bound or a
// retry budget ran out) rather than a failure.
func gaveUp(err error) bool {
	var taken *redsync.ErrTaken
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redisync.ErrNotAcquired) || errors.Is(err, redsync.ErrFailed) ||
		errors.As(err, &taken) || errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, rueidislock.ErrNotLocked)
}

func (r *run) checkExclusion(t *table, what string, overlaps map[string]int64) {
	var bad []string
	for _, lib := range t.libs {
		if n := overlaps[lib]; n > 0 {
			bad = append(bad, fmt.Sprintf("%s %d", lib, n))
		}
	}
	if len(bad) > 0 {
		msg := fmt.Sprintf("%s %s: MUTUAL EXCLUSION BROKEN: overlapping holders: %v", t.id, what, bad)
		r.broken = append(r.broken, msg)
		t.note("%s", msg)
	}
}
