package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

var (
	mGroupPairs = metric{name: "pairs_per_s", head: "pairs/s", higher: true}
	mGroupAcq50 = metric{name: "acquire_p50_us", head: "acquire p50 us"}
	mGroupP50   = metric{name: "p50_us", head: "pair p50 us"}
	mGroupP99   = metric{name: "p99_us", head: "pair p99 us"}
	mGroupAcqRT = metric{name: "cmds_per_acq", head: "cmds/acq"}
	mGroupRT    = metric{name: "cmds_per_pair", head: "cmds/pair"}
	mGroupSrv   = metric{name: "srv_cmds_per_pair", head: "srv cmds/pair"}
	mGroupCPU   = metric{name: "srv_cpu_us_per_pair", head: "srv CPU us/pair"}
	mGroupCap   = metric{name: "pairs_per_core_s", head: "pairs/s per core", higher: true}
)

func init() {
	extraBenchmarks = append(extraBenchmarks, struct {
		id  string
		run func(r *run) []*table
	}{"B13", (*run).b13})
}

// groupLib locks n values at once, on one Client.
type groupLib struct {
	name, config string
	lock         func(c *redisync.Client, key string, values []string) (unlock func() error, err error)
}

var groupLibs = []groupLib{
	{
		name:   "group",
		config: "multilock.NewGroup(client, key, values) with defaults (watchdog): one hash, one script per acquisition and per release",
		lock: func(c *redisync.Client, key string, values []string) (func() error, error) {
			g, err := multilock.NewGroup(c, key, values)
			if err != nil {
				return nil, err
			}
			held, err := g.Lock(context.Background())
			if err != nil {
				return nil, err
			}
			return func() error { return g.Unlock(held) }, nil
		},
	},
	{
		name:   "multilock",
		config: "multilock.New over one rlock.New(client, key+\":\"+value) per value, defaults (watchdog), the same Client: a script per lock, acquisitions in turn, releases side by side",
		lock: func(c *redisync.Client, key string, values []string) (func() error, error) {
			locks := make([]multilock.Locker, len(values))
			for i, v := range values {
				l, err := rlock.New(c, key+":"+v)
				if err != nil {
					return nil, err
				}
				locks[i] = l
			}
			m, err := multilock.New(locks...)
			if err != nil {
				return nil, err
			}
			held, err := m.Lock(context.Background())
			if err != nil {
				return nil, err
			}
			return func() error { return m.Unlock(held) }, nil
		},
	},
}

// B13: many values locked at once, serially, uncontended, fresh values each time: the group lock
// (Redisson's RedissonFasterMultiLock) against a MultiLock of as many reentrant locks.
func (r *run) b13() []*table {
	var out []*table
	for _, n := range []int{10, 100} {
		out = append(out, r.b13one(n))
	}
	return out
}

// b13one is B13 for n values.
func (r *run) b13one(n int) *table {
	t := newTable("B13", fmt.Sprintf("lock %d values at once, 1 goroutine, fresh values each time", n),
		map[string]any{"deployment": r.dep.name, "values": n},
		mGroupPairs, mGroupAcq50, mGroupP50, mGroupP99, mGroupAcqRT, mGroupRT, mGroupSrv, mGroupCPU, mGroupCap)
	for _, gl := range groupLibs {
		t.note("%s: %s", gl.name, gl.config)
	}
	values := make([]string, n)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	type state struct {
		n       *atomic.Int64
		c       *redisync.Client
		a       acc
		acq     []time.Duration
		acqCmds int64
		warmed  bool
	}
	states := map[string]*state{}
	ls := make([]*lib, len(groupLibs))
	for i, gl := range groupLibs {
		ls[i] = &lib{name: gl.name}
		s := &state{n: new(atomic.Int64)}
		c, err := redisyncClient(r.dep, s.n)
		if err != nil {
			t.note("%s: could not connect: %v", gl.name, err)
			continue
		}
		defer closeClient(c)
		s.c = c
		states[gl.name] = s
	}
	failed := r.interleave(ls, func(rep int, l *lib) error {
		s := states[l.name]
		if s == nil {
			return fmt.Errorf("no client")
		}
		gl := groupLibs[0]
		for _, g := range groupLibs {
			if g.name == l.name {
				gl = g
			}
		}
		pairs := func(prefix string, d time.Duration, measure bool) error {
			end := time.Now().Add(d)
			for i := 0; time.Now().Before(end); i++ {
				start := time.Now()
				c0 := s.n.Load()
				unlock, err := gl.lock(s.c, prefix+strconv.Itoa(i), values)
				if err != nil {
					return err
				}
				acquired := time.Now()
				c1 := s.n.Load()
				if err := unlock(); err != nil {
					return err
				}
				if measure {
					s.a.lat = append(s.a.lat, time.Since(start))
					s.acq = append(s.acq, acquired.Sub(start))
					s.acqCmds += c1 - c0
				}
			}
			return nil
		}
		if !s.warmed {
			s.warmed = true
			if err := pairs(fmt.Sprintf("b13:warm:%s:%d:", l.name, n), r.slice/5, false); err != nil {
				return err
			}
		}
		w := openWindow(r.dep, s.n)
		before := len(s.a.lat)
		if err := pairs(fmt.Sprintf("b13:%s:%d:%d:", l.name, n, rep), r.slice, true); err != nil {
			return err
		}
		return s.a.add(w, int64(len(s.a.lat)-before))
	})
	for _, gl := range groupLibs {
		s := states[gl.name]
		if s == nil {
			continue
		}
		if err := failed[gl.name]; err != nil {
			t.note("%s failed: %v", gl.name, err)
			continue
		}
		a := &s.a
		sortDurations(a.lat)
		sortDurations(s.acq)
		t.set(gl.name, mGroupPairs.name, a.rate())
		t.set(gl.name, mGroupAcq50.name, us(percentile(s.acq, .5)))
		t.set(gl.name, mGroupP50.name, us(percentile(a.lat, .5)))
		t.set(gl.name, mGroupP99.name, us(percentile(a.lat, .99)))
		t.set(gl.name, mGroupAcqRT.name, float64(s.acqCmds)/float64(len(s.acq)))
		t.set(gl.name, mGroupRT.name, a.perOp(a.cmds))
		t.set(gl.name, mGroupSrv.name, a.perOp(a.srv.calls))
		t.set(gl.name, mGroupCPU.name, us(a.srv.cpu)/float64(a.ops))
		t.set(gl.name, mGroupCap.name, perCore(a.ops, a.srv.cpu))
		t.note("%s server calls per pair (scripts' inner calls included): %s", gl.name, a.breakdown(6))
	}
	t.note("cmds/acq: commands the Client sent while Lock ran; cmds/pair: all it sent over the slices, the group lock's deletion of each acquisition's memo (in the background, batched) included")
	g, m := t.get("group", mGroupPairs.name), t.get("multilock", mGroupPairs.name)
	t.note("group/multilock: %.1fx the pairs/s, %.2fx the pair p50", g/m, t.get("group", mGroupP50.name)/t.get("multilock", mGroupP50.name))
	pair := t.get("group", mGroupRT.name)
	t.expect(pair <= 3.001, "group: <= 3 commands per pair (acquisition, release, the memo's deletion)", "%.2f", pair)
	return t
}
