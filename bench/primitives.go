package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

func init() {
	extraBenchmarks = append(extraBenchmarks,
		struct {
			id  string
			run func(r *run) []*table
		}{"B5", (*run).b5},
		struct {
			id  string
			run func(r *run) []*table
		}{"B6", (*run).b6},
		struct {
			id  string
			run func(r *run) []*table
		}{"B7", (*run).b7},
		struct {
			id  string
			run func(r *run) []*table
		}{"B8", (*run).b8},
	)
}

// redisyncClient opens one redisync Client with a counting connection.
func redisyncClient(d *deployment, n *atomic.Int64) (*redisync.Client, error) {
	lk, err := openRedisync(d, n)
	if err != nil {
		return nil, err
	}
	return lk.(*redisyncLocker).c, nil
}

func closeClient(c *redisync.Client) {
	c.Close()
	c.Redis().Close()
}

// fairLocker is redisync's fair lock behind the locker interface. Its client stamps the return of
// each Lock's first try, for the FIFO check.
type fairLocker struct {
	c     *redisync.Client
	stamp *queueStamp
}

func (f *fairLocker) queue() *queueStamp { return f.stamp }

// stampingClient tells a queueStamp when a fair-lock try returns: a script whose second key is the
// lock's queue and whose reply is an array (the acquire script's; a leave, which a Client also sends
// in the background after a hand-over that its waiter's own try took, and a release answer an
// integer).
type stampingClient struct {
	rueidis.Client
	stamp *queueStamp
}

func (c stampingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	// Read before Do: rueidis recycles a command once it has been answered.
	args := cmd.Commands()
	try := len(args) > 4 && strings.HasPrefix(args[4], layout.FairLock.Queue+":")
	res := c.Client.Do(ctx, cmd)
	if _, err := res.ToArray(); try && err == nil {
		c.stamp.returned(time.Now())
	}
	return res
}

func (f *fairLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return f.TryLock(ctx, key, -1)
}

// TryLock waits at most wait (no bound when wait < 0).
func (f *fairLocker) TryLock(ctx context.Context, key string, wait time.Duration) (func(context.Context) error, error) {
	l, err := fairlock.New(f.c, key)
	if err != nil {
		return nil, err
	}
	return lockOwned(ctx, l, wait)
}

func (f *fairLocker) Close() { closeClient(f.c) }

// B5: the fair lock under B4's workload, with rlock beside it for reference.
func (r *run) b5() []*table {
	fair := &lib{name: "fairlock", config: "fairlock.New(client, key) with defaults", open: func(d *deployment, n *atomic.Int64) (locker, error) {
		rdb, err := rueidisClient(d, n)
		if err != nil {
			return nil, err
		}
		stamp := &queueStamp{}
		c, err := redisync.Wrap(stampingClient{rdb, stamp})
		if err != nil {
			rdb.Close()
			return nil, err
		}
		return &fairLocker{c, stamp}, nil
	}}
	ref := &lib{name: "rlock", open: libByName("redisync").open}
	sizes := []time.Duration{0, time.Millisecond}
	if r.quick {
		sizes = []time.Duration{100 * time.Microsecond}
	}
	return r.contentionFIFO("B5", "fair lock, 8 separate clients, one key (rlock for reference)", r.dep, []*lib{fair, ref}, 8, sizes, true, func(t *table) {
		v := t.get("fairlock", mFIFO.name)
		t.expect(v == 0, "0 grants out of FIFO order", "%.0f", v)
		h, ref := t.get("fairlock", mHand50.name), t.get("rlock", mHand50.name)
		t.expect(h <= 1.5*ref, "handoff within 1.5x of rlock's (B4)", "%.2fx (%.0f us vs %.0f us)", h/ref, h, ref)
		t.expect(t.get("fairlock", mOverlaps.name) == 0, "0 overlaps", "%.0f", t.get("fairlock", mOverlaps.name))
	})
}

func libByName(name string) *lib {
	for _, l := range libs {
		if l.name == name {
			return l
		}
	}
	panic("no library " + name)
}

var (
	mReads     = metric{name: "read_acq_per_s", head: "reads/s", higher: true}
	mWrites    = metric{name: "write_acq_per_s", head: "writes/s", higher: true}
	mWriter99  = metric{name: "writer_wait_p99_ms", head: "writer wait p99 ms"}
	mRWCmds    = metric{name: "cmds_per_acq", head: "cmds/acq"}
	mViolation = metric{name: "violations", head: "exclusion broken"}
)

// B6: the read-write lock under a mix of readers and writers: 8 goroutines on 4 clients, each
// acquisition held 100 us.
func (r *run) b6() []*table {
	const clients, perClient = 4, 2
	cs := 100 * time.Microsecond
	t := newTable("B6", "rwlock, 8 goroutines on 4 clients, one name, hold 100 us", map[string]any{"deployment": r.dep.name, "goroutines": clients * perClient, "cs_us": cs.Microseconds()},
		mReads, mWrites, mWriter99, mRWCmds, mCapAcq, mViolation)
	var n atomic.Int64
	var cl []*redisync.Client
	for i := 0; i < clients; i++ {
		c, err := redisyncClient(r.dep, &n)
		if err != nil {
			t.note("redisync: %v", err)
			return []*table{t}
		}
		defer closeClient(c)
		cl = append(cl, c)
	}
	for _, readPct := range []int{100, 90, 50} {
		row := fmt.Sprintf("redisync %d:%d", readPct, 100-readPct)
		name := "b6:" + strconv.Itoa(readPct)
		var reads, writes, violations atomic.Int64
		var readers, writers atomic.Int64
		var mu sync.Mutex
		var writerWaits []time.Duration
		var elapsed, cpu time.Duration
		var cmds int64
		var firstErr atomic.Value
		for rep := 0; rep < r.reps; rep++ {
			w := openWindow(r.dep, &n)
			end := time.Now().Add(r.slice)
			var wg sync.WaitGroup
			var r0, w0 = reads.Load(), writes.Load()
			for i := 0; i < clients*perClient; i++ {
				rw, err := rwlock.New(cl[i%clients], name)
				if err != nil {
					t.note("redisync: %v", err)
					return []*table{t}
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					for time.Now().Before(end) {
						write := rand.IntN(100) >= readPct
						l := rw.ReadLock()
						if write {
							l = rw.WriteLock()
						}
						start := time.Now()
						held, err := l.TryLock(ctx, attemptBound)
						got := time.Now()
						if err != nil {
							if !gaveUp(err) {
								firstErr.CompareAndSwap(nil, err)
								return
							}
							continue
						}
						if write {
							if writers.Add(1) > 1 || readers.Load() > 0 {
								violations.Add(1)
							}
						} else {
							readers.Add(1)
							if writers.Load() > 0 {
								violations.Add(1)
							}
						}
						time.Sleep(cs)
						if write {
							writers.Add(-1)
						} else {
							readers.Add(-1)
						}
						if got.Before(end) {
							if write {
								writes.Add(1)
								mu.Lock()
								writerWaits = append(writerWaits, got.Sub(start))
								mu.Unlock()
							} else {
								reads.Add(1)
							}
						}
						err = l.Unlock(held)
						if err != nil {
							firstErr.CompareAndSwap(nil, err)
							return
						}
					}
				}()
			}
			time.Sleep(time.Until(end))
			w.close()
			wg.Wait()
			if w.err != nil {
				t.note("%v", w.err)
				return []*table{t}
			}
			elapsed += w.t1.Sub(w.t0)
			cpu += w.s1.cpu - w.s0.cpu
			cmds += w.c1 - w.c0
			_, _ = r0, w0
		}
		if err, _ := firstErr.Load().(error); err != nil {
			t.note("%s failed: %v", row, err)
			continue
		}
		sortDurations(writerWaits)
		t.set(row, mReads.name, float64(reads.Load())/elapsed.Seconds())
		t.set(row, mWrites.name, float64(writes.Load())/elapsed.Seconds())
		if len(writerWaits) > 0 {
			t.set(row, mWriter99.name, us(percentile(writerWaits, .99))/1000)
		}
		t.set(row, mRWCmds.name, float64(cmds)/float64(reads.Load()+writes.Load()))
		t.set(row, mCapAcq.name, perCore(reads.Load()+writes.Load(), cpu))
		t.set(row, mViolation.name, float64(violations.Load()))
		if violations.Load() > 0 {
			r.checkExclusion(t, row, map[string]int64{row: violations.Load()})
		}
	}
	t.note("no peer has a read-write lock; exclusion broken counts a writer beside anyone, or a reader beside a writer")
	return []*table{t}
}

var (
	mPermitHand = metric{name: "permit_handoff_p50_us", head: "permit handoff p50 us"}
	mPermitRT   = metric{name: "permit_handoff_p50_rtt", head: "p50 in RTTs"}
	mAbove      = metric{name: "holders_above_permits", head: "above permits"}
	mMaxHolders = metric{name: "max_holders", head: "max holders"}
)

// B7: a semaphore with 1, 8 and 64 permits and twice as many goroutines (at least 8), spread over 4
// clients, each acquisition held 100 us.
func (r *run) b7() []*table {
	const clients = 4
	cs := 100 * time.Microsecond
	t := newTable("B7", "semaphore, 2x as many goroutines as permits (at least 8) on 4 clients, hold 100 us", map[string]any{"deployment": r.dep.name, "cs_us": cs.Microseconds()},
		mAcq, mPermitHand, mPermitRT, mCmds, mCapAcq, mMaxHolders, mAbove)
	var n atomic.Int64
	var cl []*redisync.Client
	for i := 0; i < clients; i++ {
		c, err := redisyncClient(r.dep, &n)
		if err != nil {
			t.note("redisync: %v", err)
			return []*table{t}
		}
		defer closeClient(c)
		cl = append(cl, c)
	}
	for _, permits := range []int64{1, 8, 64} {
		row := fmt.Sprintf("redisync %d permits", permits)
		rtt, err := roundTrip(r.dep)
		if err != nil {
			rtt = r.rtt
		}
		name := "b7:" + strconv.FormatInt(permits, 10)
		s0, err := semaphore.New(cl[0], name)
		if err == nil {
			_, err = s0.TrySetPermits(context.Background(), permits)
		}
		if err != nil {
			t.note("%s: %v", row, err)
			continue
		}
		goroutines := max(8, 2*int(permits))
		var (
			holders, maxHolders, above atomic.Int64
			relStart                   atomic.Int64
			acquired                   int64
			hand                       []time.Duration
			mu                         sync.Mutex
			elapsed, cpu               time.Duration
			cmds                       int64
			firstErr                   atomic.Value
		)
		for rep := 0; rep < r.reps; rep++ {
			w := openWindow(r.dep, &n)
			end := time.Now().Add(r.slice)
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				s, err := semaphore.New(cl[g%clients], name)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					break
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					for time.Now().Before(end) {
						start := time.Now()
						err := s.TryAcquire(ctx, 1, attemptBound)
						got := time.Now()
						if err != nil {
							if !gaveUp(err) {
								firstErr.CompareAndSwap(nil, err)
								return
							}
							continue
						}
						h := holders.Add(1)
						if h > permits {
							above.Add(1)
						}
						for m := maxHolders.Load(); h > m && !maxHolders.CompareAndSwap(m, h); m = maxHolders.Load() {
						}
						if got.Before(end) {
							mu.Lock()
							acquired++
							if rs := relStart.Load(); rs > start.UnixNano() {
								hand = append(hand, got.Sub(time.Unix(0, rs)))
							}
							mu.Unlock()
						}
						time.Sleep(cs)
						holders.Add(-1)
						relStart.Store(time.Now().UnixNano())
						if err := s.Release(ctx, 1); err != nil {
							firstErr.CompareAndSwap(nil, err)
							return
						}
					}
				}()
			}
			time.Sleep(time.Until(end))
			w.close()
			wg.Wait()
			elapsed += w.t1.Sub(w.t0)
			cpu += w.s1.cpu - w.s0.cpu
			cmds += w.c1 - w.c0
		}
		if err, _ := firstErr.Load().(error); err != nil {
			t.note("%s failed: %v", row, err)
			continue
		}
		sortDurations(hand)
		h50 := percentile(hand, .5)
		t.set(row, mAcq.name, float64(acquired)/elapsed.Seconds())
		t.set(row, mPermitHand.name, us(h50))
		t.set(row, mPermitRT.name, float64(h50)/float64(rtt))
		t.set(row, mCmds.name, float64(cmds)/float64(acquired))
		t.set(row, mCapAcq.name, perCore(acquired, cpu))
		t.set(row, mMaxHolders.name, float64(maxHolders.Load()))
		t.set(row, mAbove.name, float64(above.Load()))
		if above.Load() > 0 {
			r.checkExclusion(t, row, map[string]int64{row: above.Load()})
		}
		t.expect(above.Load() == 0, row+": never more holders than permits", "%d times above", above.Load())
		t.expect(float64(h50) <= 2*float64(rtt), row+": permit handoff p50 <= 2 round trips", "%.2f RTT (%.0f us, RTT %.0f us)", float64(h50)/float64(rtt), us(h50), us(rtt))
	}
	t.note("permit handoff: from the start of a release to the return of an Acquire that was already waiting when the release began; no peer has a semaphore")
	return []*table{t}
}

var (
	mRel50  = metric{name: "release_p50_us", head: "release p50 us"}
	mRel99  = metric{name: "release_p99_us", head: "release p99 us"}
	mRelAll = metric{name: "all_released_p50_us", head: "all released p50 us"}
)

// B8: a countdown latch with 100 waiters on 4 clients: from the start of the last CountDown to the
// return of each Await.
func (r *run) b8() []*table {
	const clients, waiters = 4, 100
	t := newTable("B8", "countdown latch, 100 waiters on 4 clients", map[string]any{"deployment": r.dep.name, "waiters": waiters},
		mRel50, mRel99, mRelAll, mCmds)
	var n atomic.Int64
	var cl []*redisync.Client
	for i := 0; i <= clients; i++ {
		c, err := redisyncClient(r.dep, &n)
		if err != nil {
			t.note("redisync: %v", err)
			return []*table{t}
		}
		defer closeClient(c)
		cl = append(cl, c)
	}
	rounds := 5 * r.reps
	var lat, all []time.Duration
	var cmds int64
	for round := 0; round < rounds; round++ {
		name := fmt.Sprintf("b8:%d", round)
		opener, err := countdown.New(cl[clients], name)
		if err == nil {
			_, err = opener.TrySetCount(context.Background(), 1)
		}
		if err != nil {
			t.note("%v", err)
			return []*table{t}
		}
		var wg sync.WaitGroup
		done := make([]time.Time, waiters)
		errs := make([]error, waiters)
		var started sync.WaitGroup
		for i := 0; i < waiters; i++ {
			l, err := countdown.New(cl[i%clients], name)
			if err != nil {
				t.note("%v", err)
				return []*table{t}
			}
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				started.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				errs[i] = l.Await(ctx)
				done[i] = time.Now()
			}()
		}
		started.Wait()
		// Let every waiter subscribe: the figure is the release of parked waiters.
		time.Sleep(300 * time.Millisecond)
		c0 := n.Load()
		start := time.Now()
		if err := opener.CountDown(context.Background()); err != nil {
			t.note("%v", err)
			return []*table{t}
		}
		wg.Wait()
		cmds += n.Load() - c0
		var last time.Duration
		for i := range done {
			if errs[i] != nil {
				t.note("Await: %v", errs[i])
				return []*table{t}
			}
			d := done[i].Sub(start)
			lat = append(lat, d)
			last = max(last, d)
		}
		all = append(all, last)
	}
	sortDurations(lat)
	sortDurations(all)
	t.set("redisync", mRel50.name, us(percentile(lat, .5)))
	t.set("redisync", mRel99.name, us(percentile(lat, .99)))
	t.set("redisync", mRelAll.name, us(percentile(all, .5)))
	t.set("redisync", mCmds.name, float64(cmds)/float64(rounds))
	t.note("cmds/acq here: commands from the last CountDown until every waiter returned, per round; no peer has a latch")
	return []*table{t}
}
