package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

var (
	mAcq50     = metric{name: "acquire_p50_us", head: "acquire p50 us", ratio: true}
	mAcq99     = metric{name: "acquire_p99_us", head: "acquire p99 us", ratio: true}
	mStopped50 = metric{name: "one_stopped_p50_ms", head: "1 server stopped: ms", ratio: true}
	mStoppedOK = metric{name: "one_stopped_acquired", head: "acquired"}
)

func init() {
	extraBenchmarks = append(extraBenchmarks, struct {
		id  string
		run func(r *run) []*table
	}{"B10", (*run).b10})
}

// multiLib is a lock over several independent servers.
type multiLib struct {
	name, config string
	open         func(ds []*deployment, n *atomic.Int64) (locker, error)
}

var multiLibs = []multiLib{
	{
		name:   "redisync-redlock",
		config: "multilock.NewRedLock over one rlock per server (rlock.WithLease(8 s), each on its own Client), defaults: instance timeout 50 ms, retry delay 100 ms",
		open: func(ds []*deployment, n *atomic.Int64) (locker, error) {
			return openRedisyncMulti(ds, n, true)
		},
	},
	{
		name:   "redisync-multilock",
		config: "multilock.New over one rlock per server (watchdog, each on its own Client): needs all of them",
		open: func(ds []*deployment, n *atomic.Int64) (locker, error) {
			return openRedisyncMulti(ds, n, false)
		},
	},
	{
		name:   "redsync-1ms",
		config: "redsync RedLock, one goredis v9 pool per server, WithRetryDelay(1 ms), WithTries(MaxInt32), expiry 8 s",
		open: func(ds []*deployment, n *atomic.Int64) (locker, error) {
			return openRedsyncMulti(ds, n, redsync.WithRetryDelay(time.Millisecond), redsync.WithTries(1<<30)), nil
		},
	},
}

// B10: a lock over 3 and 5 independent servers: uncontended acquire latency, and how an acquisition
// fares with one server stopped (SIGSTOP: it accepts connections and answers nothing).
func (r *run) b10() []*table {
	servers := make([]*redistest.Server, 5)
	for i := range servers {
		s, err := redistest.NewServer(redistest.Config{})
		if err != nil {
			t := newTable("B10", "MultiLock / RedLock over several servers", nil)
			t.note("could not start servers: %v", err)
			return []*table{t}
		}
		atExit(func() { s.Close() })
		defer s.Close()
		servers[i] = s
	}
	var out []*table
	for _, k := range []int{3, 5} {
		t := newTable("B10", fmt.Sprintf("lock over %d servers", k), map[string]any{"servers": k},
			mAcq50, mAcq99, mStopped50, mStoppedOK)
		ds := make([]*deployment, k)
		var err error
		for i := range ds {
			if ds[i], err = r.via(standalone(servers[i])); err != nil {
				t.note("%v", err)
				return append(out, t)
			}
		}
		for _, ml := range multiLibs {
			t.note("%s: %s", ml.name, ml.config)
		}
		for _, ml := range multiLibs {
			if err := r.multiOne(t, ml, ds); err != nil {
				t.note("%s failed: %v", ml.name, err)
			}
		}
		out = append(out, t)
	}
	return out
}

// stoppedBound is the caller's wait bound for an acquisition with one server stopped.
const stoppedBound = time.Second

// multiLocker is redisync's MultiLock or RedLock over one Client per server.
type multiLocker struct {
	clients []*redisync.Client
	red     bool
}

func openRedisyncMulti(ds []*deployment, n *atomic.Int64, red bool) (locker, error) {
	m := &multiLocker{red: red}
	for _, d := range ds {
		c, err := redisyncClient(d, n)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.clients = append(m.clients, c)
	}
	return m, nil
}

func (m *multiLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	subs := make([]multilock.Locker, len(m.clients))
	for i, c := range m.clients {
		var opts []rlock.Option
		if m.red {
			opts = append(opts, rlock.WithLease(8*time.Second))
		}
		l, err := rlock.New(c, key, opts...)
		if err != nil {
			return nil, err
		}
		subs[i] = l
	}
	var lk multilock.Locker
	var err error
	if m.red {
		lk, err = multilock.NewRedLock(subs...)
	} else {
		lk, err = multilock.New(subs...)
	}
	if err != nil {
		return nil, err
	}
	held, err := lk.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { return lk.Unlock(held) }, nil
}

func (m *multiLocker) Close() {
	for _, c := range m.clients {
		closeClient(c)
	}
}

func (r *run) multiOne(t *table, ml multiLib, ds []*deployment) error {
	var n atomic.Int64
	lk, err := ml.open(ds, &n)
	if err != nil {
		return err
	}
	defer lk.Close()
	ctx := context.Background()
	prefix := fmt.Sprintf("b10:%s:%d:", ml.name, len(ds))
	var lat []time.Duration
	end := time.Now().Add(time.Duration(r.reps) * r.slice / 2)
	for i := 0; time.Now().Before(end); i++ {
		start := time.Now()
		unlock, err := lk.Lock(ctx, prefix+strconv.Itoa(i))
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
		if err := unlock(ctx); err != nil {
			return err
		}
	}
	sortDurations(lat)
	t.set(ml.name, mAcq50.name, us(percentile(lat, .5)))
	t.set(ml.name, mAcq99.name, us(percentile(lat, .99)))

	// One server stopped: RedLock still has a majority; what does an acquisition cost now?
	stopped := ds[len(ds)-1].servers[0]
	if err := stopped.Pause(); err != nil {
		return err
	}
	defer stopped.Resume()
	attempts := 3
	if r.quick {
		attempts = 1
	}
	var slow []time.Duration
	acquired := 0
	for i := 0; i < attempts; i++ {
		actx, cancel := context.WithTimeout(ctx, stoppedBound)
		start := time.Now()
		unlock, err := lk.Lock(actx, prefix+"stopped:"+strconv.Itoa(i))
		slow = append(slow, time.Since(start))
		if err == nil {
			acquired++
			uctx, ucancel := context.WithTimeout(ctx, 20*time.Second)
			_ = unlock(uctx) // the stopped server cannot answer
			ucancel()
		} else if !gaveUp(err) && !errors.Is(err, context.DeadlineExceeded) {
			cancel()
			return err
		}
		cancel()
	}
	sortDurations(slow)
	t.set(ml.name, mStopped50.name, us(percentile(slow, .5))/1000)
	t.set(ml.name, mStoppedOK.name, float64(acquired)/float64(attempts))
	return nil
}
