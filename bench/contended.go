package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

var (
	mAcq    = metric{name: "acq_per_s", head: "acq/s", higher: true, ratio: true}
	mHand50 = metric{name: "handoff_p50_us", head: "handoff p50 us", ratio: true}
	mHand99 = metric{name: "handoff_p99_us", head: "handoff p99 us", ratio: true}
	mHandRT = metric{name: "handoff_p50_rtt", head: "p50 in RTTs"}
	mWait99 = metric{name: "wait_p99_ms", head: "wait p99 ms", ratio: true}
	mCmds   = metric{name: "cmds_per_acq", head: "cmds/acq", ratio: true}
	mSrvAcq = metric{name: "srv_cmds_per_acq", head: "srv cmds/acq"}
	mJain   = metric{name: "jain", head: "Jain", higher: true}
	mGaveUp = metric{name: "gave_up", head: "gave up"}
)

// contention runs B4's workload: k separate clients of each library in a loop on one key, holding it
// for cs. It reports one table per critical-section size.
func (r *run) contention(id, title string, d *deployment, ls []*lib, k int, sizes []time.Duration, extra func(t *table)) []*table {
	return r.contentionFIFO(id, title, d, ls, k, sizes, false, extra)
}

// contentionFIFO is contention that also counts grants out of FIFO order when fifo is set.
func (r *run) contentionFIFO(id, title string, d *deployment, ls []*lib, k int, sizes []time.Duration, fifo bool, extra func(t *table)) []*table {
	var out []*table
	for _, cs := range sizes {
		// The round trip in which handoffs are judged, measured now: the machine's load drifts.
		rtt, err := roundTrip(d)
		if err != nil {
			rtt = r.rtt
		}
		ms := []metric{mAcq, mHand50, mHand99, mHandRT, mWait99, mCmds, mSrvAcq, mCapAcq, mJain, mOverlaps, mGaveUp}
		if fifo {
			ms = append(ms, mFIFO)
		}
		ms = append(ms, mKeys, mMem)
		t := newTable(id, title, map[string]any{"deployment": d.name, "clients": k, "cs_us": cs.Microseconds(), "rtt_us": int(us(rtt))}, ms...)
		all, ok := openAll(d, ls, k, t)
		accs := map[string]*acc{}
		overlaps := map[string]int64{}
		key := fmt.Sprintf("%s:cs%d", id, cs.Microseconds())
		failed := r.interleave(ok, func(rep int, l *lib) error {
			o := all[l.name]
			a := accs[l.name]
			if a == nil {
				a = &acc{perOwner: make([]int64, k)}
				accs[l.name] = a
				if _, err := contend(o.lockers, key+":"+l.name, cs, r.slice/5, nil, nil); err != nil {
					return err
				}
			}
			w := openWindow(d, o.n)
			var order *fifoCheck
			if fifo {
				order = newFIFOCheck(o.lockers)
			}
			res, err := contend(o.lockers, key+":"+l.name, cs, r.slice, w, order)
			if err != nil {
				return err
			}
			a.lat = append(a.lat, res.wait...)
			a.handoff = append(a.handoff, res.handoff...)
			for i, n := range res.perOwner {
				a.perOwner[i] += n
			}
			a.gaveUp += res.gaveUp
			if order != nil {
				a.fifo += order.violations
				a.fifoChecked = true
			}
			overlaps[l.name] += res.overlaps
			var n int64
			for _, x := range res.perOwner {
				n += x
			}
			return a.add(w, n)
		})
		closeAll(all)
		for _, l := range ok {
			if err := failed[l.name]; err != nil {
				t.note("%s failed: %v", l.name, err)
				continue
			}
			a := accs[l.name]
			sortDurations(a.lat)
			sortDurations(a.handoff)
			t.set(l.name, mAcq.name, a.rate())
			h50 := percentile(a.handoff, .5)
			t.set(l.name, mHand50.name, us(h50))
			t.set(l.name, mHand99.name, us(percentile(a.handoff, .99)))
			t.set(l.name, mHandRT.name, float64(h50)/float64(rtt))
			t.set(l.name, mWait99.name, us(percentile(a.lat, .99))/1000)
			t.set(l.name, mCmds.name, a.perOp(a.cmds))
			t.set(l.name, mSrvAcq.name, a.perOp(a.srv.calls))
			t.set(l.name, mCapAcq.name, perCore(a.ops, a.srv.cpu))
			t.set(l.name, mJain.name, jain(a.perOwner))
			t.set(l.name, mOverlaps.name, float64(overlaps[l.name]))
			t.set(l.name, mGaveUp.name, float64(a.gaveUp))
			if a.fifoChecked {
				t.set(l.name, mFIFO.name, float64(a.fifo))
			}
			a.leftovers(t, l.name)
		}
		leftoversNote(t, ok, accs)
		for _, l := range ok {
			if a := accs[l.name]; failed[l.name] == nil && a != nil && (variant(l.name) || l.name == "fairlock") {
				t.note("%s server calls per acquisition (scripts' inner calls included): %s", l.name, a.breakdown(8))
			}
		}
		r.checkExclusion(t, fmt.Sprintf("cs %v", cs), overlaps)
		t.note("handoff: from the start of a release to the return of the next acquisition by another client; wait: one Lock call; gave up: Lock calls that ended without the lock (retry budget, or the harness's %v bound: a TryLock wait for redisync, a ctx deadline for the peers) and were repeated", attemptBound)
		if extra != nil {
			extra(t)
		}
		out = append(out, t)
	}
	return out
}

// work stands for a critical section of d. Go rounds a timer under a millisecond up to about one
// millisecond when the process has nothing else to run (time.Sleep(100 us) takes 1.085 ms on the
// reference machine), which would make a 100 us section ten times longer for a library whose waiters
// block than for one whose waiters poll and keep the scheduler awake. Sections under a millisecond
// are therefore spun (one holder at a time here: B6 and B7, where many hold at once, sleep); longer
// ones sleep.
func work(d time.Duration) {
	if d <= 0 {
		return
	}
	if d >= time.Millisecond {
		time.Sleep(d)
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); { // spin
	}
}

// attemptBound bounds one Lock call in contended workloads, so that a library that misses a wake-up
// shows as "gave up" instead of hanging the run.
const attemptBound = 3 * time.Second

type contendResult struct {
	wait, handoff []time.Duration
	perOwner      []int64
	overlaps      int64
	gaveUp        int64
}

// contend runs one client per locker in a loop on key for d: lock, hold for cs, unlock. Figures count
// acquisitions made before d ends; w (when not nil) is closed at that moment, before the contenders
// drain.
func contend(lockers []locker, key string, cs, d time.Duration, w *window, order *fifoCheck) (contendResult, error) {
	k := len(lockers)
	var (
		sec      section
		relStart atomic.Int64 // unix ns at which the last holder began its release
		relBy    atomic.Int64 // index of that holder
		givenUp  atomic.Int64
		wg       sync.WaitGroup
	)
	relBy.Store(-1)
	waits := make([][]time.Duration, k)
	hands := make([][]time.Duration, k)
	counts := make([]int64, k)
	errs := make([]error, k)
	ctx := context.Background()
	end := time.Now().Add(d)
	for i, lk := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := time.Now()
				if !start.Before(end) {
					return
				}
				order.start(i, start)
				unlock, err := lockWithin(ctx, lk, key, attemptBound)
				got := time.Now()
				order.granted(i, err == nil && got.Before(end))
				if err != nil {
					if gaveUp(err) {
						givenUp.Add(1)
						continue
					}
					errs[i] = err
					return
				}
				sec.enter()
				in := got.Before(end)
				if in {
					counts[i]++
					waits[i] = append(waits[i], got.Sub(start))
					if by := relBy.Load(); by >= 0 && by != int64(i) {
						hands[i] = append(hands[i], got.Sub(time.Unix(0, relStart.Load())))
					}
				}
				work(cs)
				sec.leave()
				relBy.Store(int64(i))
				relStart.Store(time.Now().UnixNano())
				err = unlock(ctx)
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	if w != nil {
		time.Sleep(time.Until(end))
		w.close()
	}
	wg.Wait()
	res := contendResult{perOwner: counts, overlaps: sec.overlaps.Load(), gaveUp: givenUp.Load()}
	for i := range lockers {
		if errs[i] != nil {
			return res, errs[i]
		}
		res.wait = append(res.wait, waits[i]...)
		res.handoff = append(res.handoff, hands[i]...)
	}
	return res, nil
}

var mFIFO = metric{name: "fifo_violations", head: "out of FIFO"}

// fifoCheck counts grants made while another contender was already in the server's queue when the
// grantee started its Lock: that contender's first try had returned (it queues a waiter that does not
// acquire) before the grantee's first try was sent, so the server must grant it first. Stamps are
// taken where the commands leave and return (queueStamp), never earlier, so that a contender stalled
// by the scheduler between its start and its first try is not counted as ahead.
type fifoCheck struct {
	mu         sync.Mutex
	stamps     []*queueStamp // one per contender
	waiting    map[int]time.Time
	violations int64
}

// newFIFOCheck returns a check over lockers, or nil when one of them cannot stamp its first try.
func newFIFOCheck(lockers []locker) *fifoCheck {
	f := &fifoCheck{waiting: map[int]time.Time{}}
	for _, lk := range lockers {
		q, ok := lk.(interface{ queue() *queueStamp })
		if !ok {
			return nil
		}
		f.stamps = append(f.stamps, q.queue())
	}
	return f
}

func (f *fifoCheck) start(i int, t time.Time) {
	if f == nil {
		return
	}
	f.stamps[i].arm()
	f.mu.Lock()
	f.waiting[i] = t
	f.mu.Unlock()
}

func (f *fifoCheck) granted(i int, count bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	mine := f.waiting[i]
	delete(f.waiting, i)
	if !count {
		return
	}
	for j := range f.waiting {
		if q, ok := f.stamps[j].queued(); ok && q.Before(mine) {
			f.violations++
			return
		}
	}
}

// queueStamp records when the first fair-lock try sent after arm returned.
type queueStamp struct {
	armed atomic.Bool
	at    atomic.Int64 // unix ns; 0 while armed and not returned
}

func (q *queueStamp) arm() {
	q.at.Store(0)
	q.armed.Store(true)
}

func (q *queueStamp) returned(t time.Time) {
	if q.armed.CompareAndSwap(true, false) {
		q.at.Store(t.UnixNano())
	}
}

func (q *queueStamp) queued() (time.Time, bool) {
	ns := q.at.Load()
	return time.Unix(0, ns), ns != 0
}

func isNaN(v float64) bool { return math.IsNaN(v) }

// b4checks judges redisync against B4's targets.
func (r *run) b4checks(t *table) {
	c := t.get("redisync", mCmds.name)
	t.expect(c <= 4, "<= 4 Redis commands per acquisition", "%.2f", c)
	h := t.get("redisync", mHandRT.name)
	t.expect(h <= 2, "handoff p50 <= 2 round trips", "%.2f RTT (%.0f us, RTT %v us)", h, t.get("redisync", mHand50.name), t.params["rtt_us"])
	j := t.get("redisync", mJain.name)
	t.expect(j >= 0.95, "Jain >= 0.95", "%.3f", j)
	name, best := t.best(mAcq)
	rs := t.get("redisync", mAcq.name)
	t.expect(rs >= best, "acquisitions/s >= best peer", "%.2fx %s", rs/best, name)
	t.expect(t.get("redisync", mOverlaps.name) == 0, "0 overlaps", "%.0f", t.get("redisync", mOverlaps.name))
}
