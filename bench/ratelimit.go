package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/ratelimit"
)

func init() {
	extraBenchmarks = append(extraBenchmarks, struct {
		id  string
		run func(r *run) []*table
	}{"B12", (*run).b12})
}

// B12's workload: 16 goroutines on 4 clients take one permit at a time, as fast as the limiter lets
// them, from a limit of 100 per second.
const (
	b12Rate     = 100
	b12Interval = time.Second
	b12Clients  = 4
	b12Workers  = 16
)

// taker takes one permit of key, waiting as its library's users wait.
type taker interface {
	take(ctx context.Context, key string) error
	close()
}

type rateLib struct {
	name, config string
	open         func(d *deployment, n *atomic.Int64) (taker, error)
}

var rateLibs = []rateLib{
	{"redisync", fmt.Sprintf("ratelimit.New(client, key), TrySetRate(Overall, %d, %v); Acquire(ctx, 1): sleeps what the script answers", b12Rate, b12Interval), openRedisyncRate},
	{"redis_rate", fmt.Sprintf("redis_rate v10 (GCRA) + go-redis v9: Allow(ctx, key, PerSecond(%d)) (burst = rate); sleep RetryAfter, again", b12Rate), openRedisRate},
}

// B12: grants/s and grant precision of the rate limiters, against the configured rate.
func (r *run) b12() []*table {
	slice, reps := 10*time.Second, 3
	if r.quick {
		slice, reps = 3*time.Second, 1
	}
	t := newTable("B12", fmt.Sprintf("rate limiter, %d per %v: %d goroutines on %d clients take 1 permit at a time", b12Rate, b12Interval, b12Workers, b12Clients),
		map[string]any{"rate": b12Rate, "interval_ms": b12Interval.Milliseconds(), "slice_s": slice.Seconds(), "slices": reps},
		metric{name: "grants_per_s", head: "grants/s", higher: true},
		metric{name: "first_interval", head: "in 1st interval", higher: false},
		metric{name: "max_per_interval", head: "max in any interval", higher: false},
		metric{name: "busy_pct", head: "busy %", higher: true},
		metric{name: "cmds_per_grant", head: "cmds/grant", higher: false, ratio: true},
		metric{name: "grants_per_core_s", head: "grants/s per core", higher: true, ratio: true},
	)
	type sum struct {
		grants, steady, cmds int64
		steadyDur, cpu       time.Duration
		first, max, srvMax   int
	}
	sums := make([]sum, len(rateLibs))
	for rep := range reps {
		for i, l := range rateLibs {
			res, err := rateSlice(r.dep, l, slice, fmt.Sprintf("b12:%d:%s", rep, l.name))
			if err != nil {
				t.note("%s: %v", l.name, err)
				continue
			}
			s := &sums[i]
			s.grants += int64(len(res.grants))
			s.cmds += res.cmds
			s.first = max(s.first, res.first)
			s.max = max(s.max, res.maxWindow)
			s.srvMax = max(s.srvMax, res.serverWindow)
			s.steady += res.steady
			s.steadyDur += res.steadyDur
			s.cpu += res.cpu
		}
	}
	for i, l := range rateLibs {
		s := sums[i]
		if s.grants == 0 {
			continue
		}
		perS := float64(s.steady) / s.steadyDur.Seconds()
		t.set(l.name, "grants_per_s", perS)
		t.set(l.name, "first_interval", float64(s.first))
		t.set(l.name, "max_per_interval", float64(s.max))
		t.set(l.name, "busy_pct", 100*perS/(b12Rate/b12Interval.Seconds()))
		t.set(l.name, "cmds_per_grant", float64(s.cmds)/float64(s.grants))
		t.set(l.name, "grants_per_core_s", perCore(s.grants, s.cpu))
	}
	for _, l := range rateLibs {
		t.note("%s: %s", l.name, l.config)
	}
	t.note("grants/s and busy %%: after the first interval (the rate allows %d/s); max in any interval: of every sliding window of %v, by the time each grant returned to its caller (the limit is %d)", b12Rate, b12Interval, b12Rate)
	if srv := sums[0].srvMax; sums[0].grants > 0 {
		t.note("redisync by the grant times its script returned (the server's clock): max in any interval %d", srv)
		t.expect(srv <= b12Rate, fmt.Sprintf("redisync max in any interval <= %d by the server's clock", b12Rate), "%d", srv)
	}
	if b := t.get("redisync", "busy_pct"); !isNaN(b) {
		t.expect(b >= 90, "redisync busy >= 90%", "%.0f%%", b)
	}
	return []*table{t}
}

type rateResult struct {
	grants    []time.Time
	cmds      int64
	first     int // grants in the first interval
	maxWindow int // most grants in any window of the interval, by the callers' clock
	// serverWindow: the same by the grant times the server returned (redisync only; else -1)
	serverWindow int
	steady       int64         // grants after the first interval
	steadyDur    time.Duration // from the end of the first interval to the end of the slice
	cpu          time.Duration // the server's, over the slice
}

// rateSlice runs the workload on a fresh key for d and stamps every grant when it returns.
func rateSlice(dep *deployment, l rateLib, d time.Duration, key string) (rateResult, error) {
	var n atomic.Int64
	var takers []taker
	defer func() {
		for _, tk := range takers {
			tk.close()
		}
	}()
	for range b12Clients {
		tk, err := l.open(dep, &n)
		if err != nil {
			return rateResult{}, err
		}
		takers = append(takers, tk)
	}
	b := make([]byte, 6)
	rand.Read(b)
	key += ":" + hex.EncodeToString(b)
	if rs, ok := takers[0].(*redisyncRate); ok {
		if err := rs.set(key); err != nil {
			return rateResult{}, err
		}
	}
	n.Store(0)
	s0, err := dep.stats()
	if err != nil {
		return rateResult{}, err
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(d))
	defer cancel()
	var mu sync.Mutex
	var grants []time.Time
	var firstErr error
	var wg sync.WaitGroup
	for w := range b12Workers {
		tk := takers[w%b12Clients]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := tk.take(ctx, key)
				at := time.Now()
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				grants = append(grants, at)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return rateResult{}, firstErr
	}
	s1, err := dep.stats()
	if err != nil {
		return rateResult{}, err
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i].Before(grants[j]) })
	res := rateResult{grants: grants, cmds: n.Load(), steadyDur: d - b12Interval, serverWindow: -1, cpu: s1.cpu - s0.cpu}
	if _, ok := takers[0].(*redisyncRate); ok {
		var at []int64
		for _, tk := range takers {
			at = append(at, tk.(*redisyncRate).stamps.at...)
		}
		sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
		res.serverWindow = 0
		for i, j := 0, 0; i < len(at); i++ {
			for at[i]-at[j] >= b12Interval.Milliseconds() {
				j++
			}
			res.serverWindow = max(res.serverWindow, i-j+1)
		}
	}
	j := 0
	for i, g := range grants {
		if g.Sub(start) < b12Interval {
			res.first++
		} else {
			res.steady++
		}
		for g.Sub(grants[j]) >= b12Interval {
			j++
		}
		res.maxWindow = max(res.maxWindow, i-j+1)
	}
	return res, nil
}

// --- redisync ---

type redisyncRate struct {
	c      *redisync.Client
	stamps *serverStamps
}

// serverStamps records the server time that the acquiring script returns with each grant ({1, ms}).
type serverStamps struct {
	rueidis.Client
	mu sync.Mutex
	at []int64
}

func (s *serverStamps) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	res := s.Client.Do(ctx, cmd)
	if v, err := res.AsIntSlice(); err == nil && len(v) == 2 && v[0] == 1 && v[1] > 1e12 {
		s.mu.Lock()
		s.at = append(s.at, v[1])
		s.mu.Unlock()
	}
	return res
}

func openRedisyncRate(d *deployment, n *atomic.Int64) (taker, error) {
	rdb, err := rueidisClient(d, n)
	if err != nil {
		return nil, err
	}
	stamps := &serverStamps{Client: rdb}
	c, err := redisync.Wrap(stamps)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &redisyncRate{c: c, stamps: stamps}, nil
}

// set sets the rate, once, as the first process to come would.
func (r *redisyncRate) set(key string) error {
	l, err := ratelimit.New(r.c, key)
	if err != nil {
		return err
	}
	_, err = l.TrySetRate(context.Background(), ratelimit.Config{Rate: b12Rate, Interval: b12Interval, KeepAlive: time.Minute})
	return err
}

func (r *redisyncRate) take(ctx context.Context, key string) error {
	l, err := ratelimit.New(r.c, key)
	if err != nil {
		return err
	}
	return l.Acquire(ctx, 1)
}

func (r *redisyncRate) close() {
	r.c.Close()
	r.c.Redis().Close()
}

// --- redis_rate ---

type redisRate struct {
	rdb redis.UniversalClient
	l   *redis_rate.Limiter
}

func openRedisRate(d *deployment, n *atomic.Int64) (taker, error) {
	rdb := goredisClient(d, n)
	return &redisRate{rdb: rdb, l: redis_rate.NewLimiter(rdb)}, nil
}

func (r *redisRate) take(ctx context.Context, key string) error {
	for {
		res, err := r.l.Allow(ctx, key, redis_rate.PerSecond(b12Rate))
		if err != nil {
			return err
		}
		if res.Allowed > 0 {
			return nil
		}
		select {
		case <-time.After(res.RetryAfter):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *redisRate) close() { r.rdb.Close() }
