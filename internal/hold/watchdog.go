package hold

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/lua"
)

// Renewal says how the watchdog renews one hold. Script renews a batch of holds of one kind in one
// call: KEYS are the keys of every hold in turn, ARGV is the TTL in milliseconds followed by the args
// of every hold in turn, and it returns one integer per hold: 1 renewed, 0 gone. Every hold of one
// script has the same number of keys; a hold's args may say how many of them follow (a group lock's
// values).
type Renewal struct {
	Script     *lua.Script
	Keys, Args []string
	// By and Field, when By is set, give the args instead: a lock's, built only when a round renews.
	By interface {
		RenewArgs(dst []string, field string) []string
	}
	Field string
}

// appendArgs appends the renewal's args to dst.
func (r *Renewal) appendArgs(dst []string) []string {
	if r.By == nil {
		return append(dst, r.Args...)
	}
	return r.By.RenewArgs(dst, r.Field)
}

// maxBatch and maxBatchArgs bound the holds renewed by one script call, and their args together, so
// that one call never blocks the server long (a group lock's hold carries each of its values).
const (
	maxBatch     = 500
	maxBatchArgs = 10000
)

// entry is one hold registered with the watchdog.
type entry struct {
	spec Renewal
	lost loser
	slot uint16
	// fixed: a hold with a fixed lease, never renewed, and only checked when its node may have lost
	// it (see check).
	fixed bool

	// guarded by Watchdog.mu
	confirmed bool
	frozen    bool      // not renewed any more: its holder is told when the lease may end
	valid     time.Time // the lease surely lasts until then: last successful send + TTL - Drift
}

// watchdog renews the leases of every hold of one client that has no fixed lease: one goroutine, one
// ticker at a third of the TTL, and one script call per batch of holds of the same kind and slot,
// however many holds there are.
type watchdog struct {
	// exec sends a Renewal, as an acquisition when acked (replicas acknowledge it), sent again at once
	// after a connection failure within bound.
	exec func(ctx context.Context, s *lua.Script, keys, args []string, acked bool, bound time.Duration) rueidis.RedisResult
	// failed hears of every batch whose Renewal failed for a transient reason.
	failed func(batch []*entry, err error)
	ttl    time.Duration
	// cluster: batches are split by slot, since a script's keys must share one.
	cluster bool
	mu      sync.Mutex
	set     map[*entry]struct{}
	kick    chan struct{} // see check
	stop    chan struct{}
	done    chan struct{}
}

// newWatchdog returns a running watchdog. On a cluster a batch holds keys of one slot only; on a
// single server (or Sentinel) every hold of one kind goes in the same batches.
func newWatchdog(exec func(context.Context, *lua.Script, []string, []string, bool, time.Duration) rueidis.RedisResult, failed func([]*entry, error), ttl time.Duration, cluster bool) *watchdog {
	w := &watchdog{exec: exec, failed: failed, ttl: ttl, cluster: cluster, set: make(map[*entry]struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// loser is told that its hold is gone (a *hold: an interface, where the method value h.lost would
// cost an allocation per registration).
type loser interface{ lost(error) }

// lostFunc is a func as a loser.
type lostFunc func(error)

func (f lostFunc) lost(err error) { f(err) }

// add registers the Renewal spec of a hold, in e unless it is nil; fixed: the hold has a fixed lease,
// and is only checked (see check).
func (w *watchdog) add(e *entry, spec Renewal, lost loser, fixed bool) *entry {
	if e == nil {
		e = new(entry)
	}
	*e = entry{spec: spec, lost: lost, fixed: fixed}
	if w.cluster && len(spec.Keys) > 0 {
		e.slot = send.Slot(spec.Keys[0])
	}
	w.readd(e)
	return e
}

func (w *watchdog) readd(e *entry) {
	w.mu.Lock()
	w.set[e] = struct{}{}
	w.mu.Unlock()
}

// confirm starts renewing e, whose hold was acquired by a command sent at start.
func (w *watchdog) confirm(e *entry, start time.Time) {
	w.mu.Lock()
	e.confirmed = true
	if v := start.Add(w.ttl - Drift(w.ttl)); v.After(e.valid) {
		e.valid = v
	}
	w.mu.Unlock()
}

// Drift is how much before a lease's end, as the client reckons it from when the acquiring or
// renewing command was sent, a holder is told that the lease may have ended: an allowance for timers
// that fire late and clocks that run apart (the Redlock algorithm's 1% + 2 ms), so that a waiter
// that tries the moment the key expires never finds the previous holder still at work.
func Drift(lease time.Duration) time.Duration { return min(lease/100+2*time.Millisecond, lease/2) }

// freeze stops renewing e; the expiry timer still reports it lost when its lease may have ended.
func (w *watchdog) freeze(e *entry) {
	w.mu.Lock()
	e.frozen = true
	w.mu.Unlock()
}

func (w *watchdog) remove(e *entry) {
	w.mu.Lock()
	delete(w.set, e)
	w.mu.Unlock()
}

// len returns how many holds are registered to be renewed.
func (w *watchdog) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for e := range w.set {
		if !e.fixed {
			n++
		}
	}
	return n
}

// check has every hold checked at once, in a round of its own: the holds with a fixed lease are
// looked for, the others renewed, and those gone are reported lost. A connection to Redis ended: the
// server may have restarted without the holds, or failed over to a replica that missed them. Checks
// asked for while a round runs are made by one round after it; a check round that cannot reach
// Redis is made again until one does.
func (w *watchdog) check() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watchdog) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// run renews every third of the TTL, one round at a time and off this loop, so that a round stuck on a
// stalled server does not delay the expiry timer: a hold that no Renewal has extended is reported lost
// at the moment its lease may have ended, whether its renewals failed, are still in flight, or have
// not started (a round stuck past a tick skips it).
func (w *watchdog) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tick := time.NewTicker(w.ttl / 3)
	defer tick.Stop()
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	finished := make(chan bool, 1) // whether every batch of the round was answered
	renewing, checking, checkNext := false, false, false
	start := func(check bool) {
		renewing, checking, checkNext = true, check, false
		go func() { finished <- w.renew(ctx, check) }()
	}
	for {
		select {
		case <-w.stop:
			cancel()
			if renewing {
				<-finished
			}
			return
		case <-tick.C:
			w.arm(expiry) // holds confirmed since the last round
			if !renewing {
				start(false)
			}
		case <-w.kick:
			if renewing {
				checkNext = true // the round on its way may have been sent before the change
			} else {
				start(true)
			}
		case answered := <-finished:
			renewing = false
			if checking && !answered {
				time.AfterFunc(send.ResendBackoff, w.check) // until Redis answers
			}
			if checkNext {
				start(true)
			}
			w.arm(expiry)
		case <-expiry.C:
			w.expire()
			w.arm(expiry)
		}
	}
}

// arm sets the timer to the earliest end of a confirmed lease.
func (w *watchdog) arm(t *time.Timer) {
	w.mu.Lock()
	var first time.Time
	for e := range w.set {
		if e.confirmed && (first.IsZero() || e.valid.Before(first)) {
			first = e.valid
		}
	}
	w.mu.Unlock()
	t.Stop()
	if !first.IsZero() {
		t.Reset(max(time.Until(first), 0))
	}
}

// expire reports lost every hold whose lease may have ended: no Renewal has extended it in time,
// or none was sent since its ctx was dropped without Unlock (frozen).
func (w *watchdog) expire() {
	now := time.Now()
	var lost, abandoned []*entry
	w.mu.Lock()
	for e := range w.set {
		if e.confirmed && !now.Before(e.valid) {
			if e.frozen {
				abandoned = append(abandoned, e)
			} else {
				lost = append(lost, e)
			}
			delete(w.set, e)
		}
	}
	w.mu.Unlock()
	for _, e := range lost {
		e.lost.lost(fmt.Errorf("%w: Renewal failed until the lease may have ended", errs.ErrLost))
	}
	for _, e := range abandoned {
		e.lost.lost(fmt.Errorf("%w: abandoned without Unlock, its lease may have ended", errs.ErrLost))
	}
}

type batchKey struct {
	script *lua.Script
	slot   uint16
	fixed  bool
}

// renew renews every confirmed entry once, and with check, checks every fixed one (see check). A batch
// that fails for a transient reason is tried again at the next tick (or check); meanwhile the expiry
// timer watches its entries' leases. It reports whether every batch was answered.
func (w *watchdog) renew(ctx context.Context, check bool) bool {
	w.mu.Lock()
	groups := make(map[batchKey][]*entry)
	for e := range w.set {
		if (e.confirmed && !e.frozen) || (check && e.fixed) {
			k := batchKey{e.spec.Script, e.slot, e.fixed}
			groups[k] = append(groups[k], e)
		}
	}
	w.mu.Unlock()
	if len(groups) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, w.ttl/3)
	defer cancel()
	renewTTL := strconv.FormatInt(w.ttl.Milliseconds(), 10)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for k, entries := range groups {
		ttl := renewTTL
		if k.fixed {
			ttl = "0" // look, do not touch
		}
		for len(entries) > 0 {
			n, args := 1, len(entries[0].spec.Args)
			for n < min(len(entries), maxBatch) && args+len(entries[n].spec.Args) <= maxBatchArgs {
				args += len(entries[n].spec.Args)
				n++
			}
			batch := entries[:n]
			entries = entries[n:]
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !w.renewBatch(ctx, k.script, ttl, batch, check) {
					failed.Store(true)
				}
			}()
		}
	}
	wg.Wait()
	return !failed.Load()
}

// renewBatch renews batch (checks it, with ttl "0"), and reports whether Redis answered; check says
// why it was sent, for the cause of what it finds lost.
func (w *watchdog) renewBatch(ctx context.Context, script *lua.Script, ttl string, batch []*entry, check bool) bool {
	keys := make([]string, 0, len(batch)*len(batch[0].spec.Keys))
	args := make([]string, 1, 1+len(batch)*len(batch[0].spec.Keys))
	args[0] = ttl
	for _, e := range batch {
		keys = append(keys, e.spec.Keys...)
		args = e.spec.appendArgs(args)
	}
	// A Renewal is idempotent: after a connection failure (a restart breaks every pipelined
	// connection once) send re-sends it at once, within the round. The lease counts from the send
	// that was answered, which is no later than this.
	sent := time.Now()
	res, err := w.exec(ctx, script, keys, args, ttl != "0", w.ttl/3).AsIntSlice() // a check writes nothing to acknowledge
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("Renewal script %s returned %d results for %d holds", script.Name(), len(res), len(batch))
	}
	var lost []*entry
	w.mu.Lock()
	for i, e := range batch {
		if _, ok := w.set[e]; !ok {
			continue // released meanwhile
		}
		switch {
		case err != nil: // transient: the expiry timer ends the hold unless a Renewal comes in time
		case res[i] == 1:
			if e.fixed {
				break
			}
			if v := sent.Add(w.ttl - Drift(w.ttl)); v.After(e.valid) {
				e.valid = v
			}
		default:
			lost = append(lost, e)
			delete(w.set, e)
		}
	}
	w.mu.Unlock()
	cause := fmt.Errorf("%w: Renewal found it gone", errs.ErrLost)
	if check {
		cause = fmt.Errorf("%w: gone after a reconnect (the server restarted or failed over without it)", errs.ErrLost)
	}
	for _, e := range lost {
		e.lost.lost(cause)
	}
	if err != nil && w.failed != nil && !errors.Is(ctx.Err(), context.Canceled) && !batch[0].fixed { // not closing
		w.failed(batch, err)
	}
	return err == nil
}
