package reliability

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

var soakFor = flag.Duration("soak", 4*time.Second, "how long TestSoak runs every primitive under random faults")

// occupancy tracks who is inside each object's critical section. A holder counts as inside from its
// acquisition until it releases or its hold's ctx ends (a lost lease), whichever comes first.
//
// A restart without persistence loses every lock: a holder from before it and one that acquired on
// the restarted server may both be inside for a moment, until the first learns that its lock is
// gone. That overlap is the restart's (README, "What it guarantees"), and is accepted on one
// condition: one of the two sees its ctx end with ErrLost within restartWindow of the overlap. It is
// never accepted when both surely acquired on one server: each holder knows between which restarts
// it acquired (lo: restarts completed when its call began; hi: restarts begun when it returned),
// and only holders whose spans are one and the same server cannot be explained by a restart.
type occupancy struct {
	mu sync.Mutex
	in map[string][]*occupant
	// lostLate hears of a holder from before a restart that did not end with ErrLost in time.
	lostLate func(name string, cause error)
	wg       sync.WaitGroup // the checks of such holders
	restarts atomic.Int64   // overlaps across a restart: each checked
}

type occupant struct {
	ctx    context.Context
	shared bool // a reader
	lo, hi int64
}

// enter reports whether entering breaks exclusion: another live holder is inside, either side is
// exclusive, and no restart between their acquisitions can explain it (lo and hi: see occupancy).
// The returned func leaves.
func (o *occupancy) enter(name string, ctx context.Context, shared bool, lo, hi int64) (bool, func()) {
	me := &occupant{ctx, shared, lo, hi}
	o.mu.Lock()
	defer o.mu.Unlock()
	bad := false
	for _, other := range o.in[name] {
		if other.ctx.Err() != nil || (shared && other.shared) {
			continue
		}
		if o.lostLate == nil || (me.lo == me.hi && other.lo == other.hi && me.lo == other.lo) {
			bad = true
			continue
		}
		o.restarts.Add(1)
		o.wg.Go(func() { // the one that held on the server before the restart learns that it lost
			lost := func() bool {
				return errors.Is(context.Cause(me.ctx), redisync.ErrLost) || errors.Is(context.Cause(other.ctx), redisync.ErrLost)
			}
			timeout := time.After(restartWindow)
			a, b := me.ctx.Done(), other.ctx.Done()
			for !lost() {
				if a == nil && b == nil {
					o.lostLate(name, fmt.Errorf("%v and %v", context.Cause(me.ctx), context.Cause(other.ctx)))
					return
				}
				select {
				case <-a:
					a = nil
				case <-b:
					b = nil
				case <-timeout:
					o.lostLate(name, fmt.Errorf("still held by both (%v, %v)", context.Cause(me.ctx), context.Cause(other.ctx)))
					return
				}
			}
		})
	}
	o.in[name] = append(o.in[name], me)
	return bad, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		list := o.in[name]
		for i, x := range list {
			if x == me {
				o.in[name] = append(list[:i], list[i+1:]...)
				break
			}
		}
	}
}

// TestSoak runs every primitive from several clients for -soak (4 s by default, as part of the
// suite; cd reliability && go test -race -run 'TestSoak$' -soak=5m -v . for the long form) under
// faults, and fails on any violation: two live holders of an exclusive lock, more permits out than
// exist, a latch that does not open or that one CountDown counts down twice, a hold left in Redis by
// a successful Unlock or by an acquisition that failed, and at the end a permit that is not back or a
// lock that is not free; a permit ledger (ledger_test.go) follows every permit of soak-sem through
// what the server ran and names the acquisition or grant that kept one. The clients reach the
// server through a proxy. The faults are the server's (stopped, blocked, Pub/Sub connections
// killed, restarted without persistence), every few hundred milliseconds, and the network's, more
// often: the proxy cuts the connection at a random script call, losing its reply after the server
// applied it, or its request. Faults that end a lease early by design (a clock jump) are left out:
// only fencing protects against those, and TestFaultClockJump covers them.
//
// What a restart without persistence legitimately loses, the checks allow, and nothing more: a
// lock's holder from before it and one that acquired on the restarted server may both be inside
// until one of them (the first) sees its ctx end with ErrLost, which must come within restartWindow
// (occupancy); the semaphores and the latch lose their counts, which no client can tell again, so
// none of their cycles runs across a restart, every permit must be back before it (as at the end),
// and the semaphores are set again after it, as an application would.
func TestSoak(t *testing.T) {
	own := testkit.Own(t)
	srv := own.Servers[0]
	proxy := redistest.StartProxy(t, srv.Addr)
	soak(t, soakEnv{
		tg:      &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: own.Servers},
		rdb:     own.Redis(t), // straight to the server: the checks are never cut
		arm:     proxy.Arm,
		restart: (*redistest.Server).Restart,
	})
}

// soakEnv is where a soak runs: tg's clients reach its servers through proxies that arm cuts, rdb
// reaches them for the checks, more, when set, injects faults of the deployment's own to the soak's
// objects (it runs until ctx ends, and counts each fault it injects by its kind), and restart, when
// set, restarts a server without persistence, which is then one of the faults.
type soakEnv struct {
	tg      *testkit.Target
	rdb     rueidis.Client
	arm     func(redistest.Rule) *redistest.Fault
	more    func(ctx context.Context, objects []string, count func(kind string))
	restart func(*redistest.Server) error
}

// soak runs TestSoak's workload and faults on env.
func soak(t *testing.T, env soakEnv) {
	tg, rdb := env.tg, env.rdb
	opts := []redisync.Option{redisync.WithWatchdogTimeout(2 * time.Second), redisync.WithRecheckInterval(time.Second)}
	clients := []*redisync.Client{tg.Client(t, opts...), tg.Client(t, opts...), tg.Client(t, opts...)}
	ctx, stop := context.WithTimeout(context.Background(), *soakFor)
	defer stop()

	addrs := make([]string, len(tg.Servers))
	for i, s := range tg.Servers {
		addrs[i] = s.Addr
	}
	tr := startTrace(t, *soakTrace, addrs...)
	var ops, faults, cuts, errs, violations atomic.Int64
	var kindsMu sync.Mutex
	kinds := map[string]int{}
	violation := func(format string, args ...any) {
		violations.Add(1)
		tr.violation(fmt.Sprintf(format, args...))
		kindsMu.Lock()
		kinds[format]++
		n := kinds[format]
		kindsMu.Unlock()
		if n <= 5 { // the rest are counted: one broken invariant often repeats for the rest of the run
			t.Errorf("violation: "+format, args...)
		} else {
			t.Fail()
		}
	}
	// read runs a check on the server itself; a check that fails (the server is stopped) is
	// skipped rather than counted.
	read := func(args ...string) (rueidis.RedisMessage, bool) {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := rdb.Do(rctx, rdb.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build()).ToMessage()
		return m, err == nil || rueidis.IsRedisNil(err)
	}
	// restarts counts the server's restarts; a restart waits for gate's write side, which every
	// semaphore and latch cycle holds the read side of (see the restart below).
	var restartsBegun, restartsDone atomic.Int64
	var gate sync.RWMutex
	occ := &occupancy{in: map[string][]*occupant{}, lostLate: func(name string, causes error) {
		violation("%s: two holders across a restart, and neither lost it within %v: %v", name, restartWindow, causes)
	}}
	defer occ.wg.Wait()
	var wg sync.WaitGroup
	work := func(fn func(w int, c *redisync.Client) error) {
		for w := range 3 {
			c := clients[w]
			wg.Go(func() {
				for ctx.Err() == nil {
					if err := fn(w, c); err != nil {
						errs.Add(1)
						time.Sleep(20 * time.Millisecond) // a fault: do not spin on it
					}
				}
			})
		}
	}
	// again retries a release that failed: an error must mean it took no effect, so a caller that
	// retries releases exactly once. ErrNotHeld ends it: the hold was lost, or an earlier send
	// released it.
	again := func(release func() error) error {
		start := time.Now()
		for {
			err := release()
			if err == nil || errors.Is(err, redisync.ErrNotHeld) || time.Since(start) > 30*time.Second {
				return err
			}
			tr.logf("a release failed after %v, and is made again: %v", time.Since(start), err)
			errs.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}
	// calm tells whether a call that started at start (with serverFaults at gen) overlapped no
	// server fault: only the proxy's cuts disturbed it, which the library must leave no trace of
	// (a stalled or stopped server may apply a request after the call gave up on it).
	var serverFaults, serverFaultUntil atomic.Int64
	calm := func(start time.Time, gen int64) bool {
		return serverFaults.Load() == gen && start.UnixNano() > serverFaultUntil.Load()
	}
	// owned reports the keys of which field (the owner's, given its owner) is still a field.
	owned := func(c *redisync.Client, owner int64, suffix string, keys []string) []string {
		field := c.ID() + ":" + strconv.FormatInt(owner, 10) + suffix
		var left []string
		for _, key := range keys {
			if m, ok := read("HGET", key, field); ok && !m.IsNil() {
				n, _ := m.ToString()
				left = append(left, fmt.Sprintf("%s = %s in %s", field, n, key))
			}
		}
		return left
	}
	// hold runs one exclusive or shared hold on name, checking exclusion inside, and that Redis
	// holds nothing of the owner (its field in each of keys) after a successful Unlock, or after an
	// acquisition that failed for a reason other than the wait (which may still be giving back a try
	// that acquired too late) while only the network was at fault.
	hold := func(name string, shared bool, c *redisync.Client, keys []string, suffix string,
		lock func(context.Context) (context.Context, error), unlock func(context.Context) error) error {
		start, gen, lo := time.Now(), serverFaults.Load(), restartsDone.Load()
		octx := redisync.WithOwner(ctx)
		owner, _ := redisync.OwnerID(octx)
		held, err := lock(octx)
		if err != nil {
			if !errors.Is(err, redisync.ErrNotAcquired) && ctx.Err() == nil && calm(start, gen) {
				if left := owned(c, owner, suffix, keys); len(left) > 0 {
					violation("%s: an acquisition that failed (%v) left its hold %s", name, err, left)
				}
			}
			return err
		}
		tr.logf("%s: %p acquired after %v", name, held, time.Since(start))
		defer tr.logf("%s: %p released", name, held)
		ops.Add(1)
		bad, leave := occ.enter(name, held, shared, lo, restartsBegun.Load())
		if bad {
			violation("%s entered while another live holder was inside", name)
		}
		time.Sleep(time.Millisecond)
		leave()
		err = again(func() error { return unlock(held) })
		if errors.Is(err, redisync.ErrNotHeld) {
			return nil
		}
		if err != nil {
			return err
		}
		if left := owned(c, owner, suffix, keys); len(left) > 0 {
			violation("%s: a successful Unlock left the hold %s", name, left)
		}
		return nil
	}
	const wait = 3 * time.Second

	work(func(w int, c *redisync.Client) error {
		l, _ := rlock.New(c, "soak-rlock")
		return hold(l.Name(), false, c, []string{l.Name()}, "", func(ctx context.Context) (context.Context, error) { return l.TryLock(ctx, wait) }, l.Unlock)
	})
	work(func(w int, c *redisync.Client) error {
		l, _ := fairlock.New(c, "soak-fair")
		return hold(l.Name(), false, c, []string{l.Name()}, "", func(ctx context.Context) (context.Context, error) { return l.TryLock(ctx, wait) }, l.Unlock)
	})
	work(func(w int, c *redisync.Client) error {
		rw, _ := rwlock.New(c, "soak-rw")
		l, shared, suffix := rw.ReadLock(), w != 0, ""
		if !shared {
			l, suffix = rw.WriteLock(), ":write"
		}
		return hold(rw.Name(), shared, c, []string{rw.Name()}, suffix, func(ctx context.Context) (context.Context, error) { return l.TryLock(ctx, wait) }, l.Unlock)
	})
	work(func(w int, c *redisync.Client) error {
		a, _ := rlock.New(c, "soak-ml-a")
		b, _ := rlock.New(c, "soak-ml-b")
		m, _ := multilock.New(a, b)
		return hold("soak-ml", false, c, []string{a.Name(), b.Name()}, "", func(ctx context.Context) (context.Context, error) { return m.TryLock(ctx, wait) }, m.Unlock)
	})
	const permits = 2
	s0, _ := semaphore.New(clients[0], "soak-sem")
	if _, err := s0.TrySetPermits(context.Background(), permits); err != nil {
		t.Fatal(err)
	}
	var ledger *permitLedger // it follows one server's feed
	if len(tg.Servers) == 1 {
		ledger = startPermitLedger(t, tg.Servers[0].Addr, "soak-sem", permits)
	}
	var out atomic.Int64
	work(func(w int, c *redisync.Client) error {
		gate.RLock()
		defer gate.RUnlock()
		s, _ := semaphore.New(c, "soak-sem")
		ledger.Begin(c.ID())
		err := s.TryAcquire(ctx, 1, wait)
		ledger.Told(c.ID(), err)
		if err != nil {
			return err
		}
		ops.Add(1)
		if n := out.Add(1); n > permits {
			violation("%d permits out, %d exist", n, permits)
		}
		time.Sleep(time.Millisecond)
		out.Add(-1)
		return again(func() error { return s.Release(context.Background(), 1) })
	})
	e0, _ := semaphore.NewExpirable(clients[0], "soak-exp")
	if _, err := e0.TrySetPermits(context.Background(), permits); err != nil {
		t.Fatal(err)
	}
	var expOut atomic.Int64
	work(func(w int, c *redisync.Client) error {
		gate.RLock()
		defer gate.RUnlock()
		e, _ := semaphore.NewExpirable(c, "soak-exp")
		ids, err := e.TryAcquire(ctx, 1, wait)
		if err != nil {
			return err
		}
		ops.Add(1)
		if n := expOut.Add(1); n > permits {
			violation("%d expirable permits out, %d exist", n, permits)
		}
		time.Sleep(time.Millisecond)
		expOut.Add(-1)
		err = again(func() error { return e.Release(context.Background(), ids...) })
		if errors.Is(err, redisync.ErrNotHeld) {
			return nil // an earlier send released it
		}
		return err
	})
	wg.Go(func() { // a latch, opened again and again
		l, _ := countdown.New(clients[1], "soak-latch")
		for ctx.Err() == nil {
			gate.RLock()
			if _, err := l.TrySetCount(ctx, 2); err != nil {
				gate.RUnlock()
				errs.Add(1)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			opened := make(chan error, 1)
			go func() {
				lw, _ := countdown.New(clients[2], "soak-latch")
				opened <- lw.TryAwait(context.Background(), 10*time.Second)
			}()
			for want := int64(1); want >= 0; want-- {
				if err := again(func() error { return l.CountDown(context.Background()) }); err != nil {
					errs.Add(1)
					continue
				}
				if m, ok := read("GET", "soak-latch"); ok {
					n, _ := m.AsInt64() // nil (opened: the key is gone) reads 0
					if n != want {
						violation("soak-latch: count %d after a CountDown, want %d: counted down twice", n, want)
						break
					}
				}
			}
			ops.Add(1)
			if err := <-opened; err != nil {
				errs.Add(1)
			}
			gate.RUnlock()
		}
	})

	// permitsBack waits, for up to 10 s (a give-back may still be on its way), until every permit of
	// both semaphores is back, and says what is not otherwise, with what the ledger has not seen
	// come back.
	permitsBack := func() error {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var bad []string
			for _, key := range []string{"soak-sem", "soak-exp"} {
				if m, ok := read("GET", key); !ok || func() bool { n, _ := m.AsInt64(); return n != permits }() {
					bad = append(bad, fmt.Sprintf("%s holds %s permits, want %d", key, render(m), permits))
				}
			}
			if m, ok := read("ZCARD", "{soak-exp}:timeout"); !ok || func() bool { n, _ := m.AsInt64(); return n != 0 }() {
				bad = append(bad, fmt.Sprintf("{soak-exp}:timeout holds %s permits out, want 0", render(m)))
			}
			if len(bad) == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return errors.New(strings.Join(append(bad, ledger.Report(permits)...), "; "))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// What the faults injected, by kind.
	var injectedMu sync.Mutex
	injected := map[string]int{}
	inject := func(kind, detail string) {
		faults.Add(1)
		injectedMu.Lock()
		injected[kind]++
		injectedMu.Unlock()
		tr.logf("fault: %s %s", kind, detail)
		ledger.Fault(kind + " " + detail)
	}
	// A restart without persistence: SIGKILL, then the same port with nothing saved. It loses every
	// lock, which the holders must learn (occupancy), and every semaphore and latch, whose counts no
	// client can tell again: the application sets them anew. So no semaphore or latch cycle runs
	// across a restart (gate), every permit must be back before it, as at the end, and the
	// semaphores are set again after it.
	restart := func(srv *redistest.Server) {
		gate.Lock()
		defer gate.Unlock()
		if err := permitsBack(); err != nil {
			violation("before a restart: %v", err)
		}
		inject("restart", "without persistence")
		restartsBegun.Add(1)
		if err := env.restart(srv); err != nil {
			t.Errorf("restart: %v", err)
			return
		}
		restartsDone.Add(1)
		serverFaultUntil.Store(time.Now().Add(2500*time.Millisecond + time.Second).UnixNano())
		tr.restarted(srv.Addr)
		ledger.Restarted()
		testkit.Eventually(t, 20*time.Second, func() error { // the clients connect again
			if _, err := s0.TrySetPermits(context.Background(), permits); err != nil {
				return err
			}
			_, err := e0.TrySetPermits(context.Background(), permits)
			return err
		})
		ledger.Set(permits)
	}

	// The server's faults, every few hundred milliseconds.
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(300+rand.IntN(400)) * time.Millisecond):
			}
			serverFaults.Add(1) // see calm
			serverFaultUntil.Store(time.Now().Add(2500*time.Millisecond + time.Second).UnixNano())
			srv := tg.Servers[rand.IntN(len(tg.Servers))]
			kinds := 10 // two of each kind below, and a restart where the deployment has them
			if env.restart != nil {
				kinds++
			}
			f := rand.IntN(kinds)
			if f == 10 {
				restart(srv)
				continue
			}
			switch f /= 2; f {
			case 0, 1: // a stall shorter than the TTL; one longer: leases end, holders must learn it first
				d := 2500 * time.Millisecond
				kind := "long stall (SIGSTOP)"
				if f == 0 {
					d = time.Duration(200+rand.IntN(800)) * time.Millisecond
					kind = "short stall (SIGSTOP)"
				}
				inject(kind, d.String())
				srv.Pause()
				time.Sleep(d)
				srv.Resume()
				tr.logf("fault: server resumed")
			case 2:
				inject("CLIENT KILL TYPE pubsub", "")
				srv.Do("CLIENT", "KILL", "TYPE", "pubsub")
			case 3:
				inject("CLIENT PAUSE 400 WRITE", "")
				srv.Do("CLIENT", "PAUSE", "400", "WRITE")
			case 4:
				inject("DEBUG SLEEP 0.4", "")
				go srv.Do("DEBUG", "SLEEP", "0.4")
			}
		}
	})
	// The network's: the reply of a script call lost after the server applied it, or its request,
	// several times as often, since a cut is over at once.
	objects := []string{"soak-rlock", "soak-fair", "soak-rw", "soak-ml-a", "soak-ml-b", "soak-sem", "soak-exp", "soak-latch"}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
			}
			rule := redistest.Rule{Cut: redistest.LoseReply}
			if rand.IntN(2) == 0 {
				rule.Cut = redistest.LoseRequest
			}
			if rand.IntN(2) == 0 { // half of them on one object, so that each gets its share
				rule.Key = objects[rand.IntN(len(objects))]
			}
			fault := env.arm(rule)
			select {
			case <-fault.Fired():
				cuts.Add(1)
				detail := ""
				if cmd := fault.Command(); len(cmd) > 3 {
					detail = fmt.Sprintf("%s of %s %s", cmd[0], cmd[3], strings.Join(cmd[4:], " "))
				}
				inject("cut: "+rule.Cut.String(), detail)
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			fault.Disarm()
		}
	})
	if env.more != nil {
		wg.Go(func() { env.more(ctx, objects, func(kind string) { inject(kind, "") }) })
	}
	wg.Wait()
	// Leave the servers as the clients' cleanup and the checks expect them: answering.
	for _, srv := range tg.Servers {
		srv.Resume()
	}
	var byKind []string
	for kind, n := range injected {
		byKind = append(byKind, fmt.Sprintf("%d %s", n, kind))
	}
	slices.Sort(byKind)
	occ.wg.Wait()
	summary := fmt.Sprintf("soak %v: %d operations, %d faults injected (%d cuts; %s), %d operations failed under faults, %d overlaps across a restart (each ended by ErrLost in time), %d violations",
		*soakFor, ops.Load(), faults.Load(), cuts.Load(), strings.Join(byKind, ", "), errs.Load(), occ.restarts.Load(), violations.Load())
	t.Log(summary)
	if ops.Load() == 0 || faults.Load() == 0 {
		t.Fatalf("%s: nothing was exercised", summary)
	}

	// Every permit is back and every lock is free. A give-back still under way (a try that
	// acquired after its caller gave up) may take up to the library's retry bound, and a hold
	// lost to a stall, whose Unlock found it gone, stays in Redis until its lease (the watchdog
	// timeout) ends: that long is allowed, no longer. A hold a lost reply added and nobody
	// released would also have ended by then: the check after each Unlock above catches those.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the semaphore keeps beside its count: a permit that is not back is often told by a
		// grant nobody took, a waiter record, or an acquisition's memo nobody deleted. And the fair
		// lock's line, as it was left.
		for _, q := range [][]string{
			{"HGETALL", "redisync_semaphore_grants:{soak-sem}"},
			{"ZRANGE", "redisync_semaphore_waiters:{soak-sem}", "0", "-1", "WITHSCORES"},
			{"KEYS", "redisync_once:{soak-sem}:*"},
			// The fair lock's line: a place left in it names its owner, its deadline and its record.
			{"LRANGE", "redisson_lock_queue:{soak-fair}", "0", "-1"},
			{"ZRANGE", "redisson_lock_timeout:{soak-fair}", "0", "-1", "WITHSCORES"},
			{"HGETALL", "redisync_fair_waiters:{soak-fair}"},
		} {
			if m, ok := read(q...); ok {
				t.Logf("%s: %s", strings.Join(q, " "), render(m))
			}
		}
		if m, ok := read("KEYS", "redisync_once:{soak-sem}:*"); ok {
			keys, _ := m.AsStrSlice()
			for _, k := range keys {
				if v, ok := read("GET", k); ok {
					t.Logf("%s = %s", k, render(v))
				}
			}
		}
	})
	t.Cleanup(func() {
		// Every permit accounted for: what the ledger finds wrong names the path that lost one.
		for _, bad := range ledger.Report(permits) {
			t.Errorf("permit ledger: %s", bad)
		}
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		var bad []string
		if m, ok := read("GET", "soak-sem"); !ok || func() bool { n, _ := m.AsInt64(); return n != permits }() {
			bad = append(bad, fmt.Sprintf("soak-sem holds %s permits, want %d", render(m), permits))
		}
		if m, ok := read("GET", "soak-exp"); !ok || func() bool { n, _ := m.AsInt64(); return n != permits }() {
			bad = append(bad, fmt.Sprintf("soak-exp holds %s permits, want %d", render(m), permits))
		}
		if m, ok := read("ZCARD", "{soak-exp}:timeout"); !ok || func() bool { n, _ := m.AsInt64(); return n != 0 }() {
			bad = append(bad, fmt.Sprintf("{soak-exp}:timeout holds %s permits out, want 0", render(m)))
		}
		for _, key := range []string{"soak-rlock", "soak-fair", "redisson_lock_queue:{soak-fair}", "redisson_lock_timeout:{soak-fair}",
			"soak-rw", "soak-ml-a", "soak-ml-b"} {
			if m, ok := read("EXISTS", key); !ok || func() bool { n, _ := m.AsInt64(); return n != 0 }() {
				bad = append(bad, key+" is still there")
			}
		}
		if m, ok := read("KEYS", "{soak-rw}:*:rwlock_timeout:*"); !ok || func() bool { a, _ := m.ToArray(); return len(a) > 0 }() {
			bad = append(bad, "read leases are still there: "+render(m))
		}
		if len(bad) > 0 {
			return fmt.Errorf("at the end of the soak: %s", strings.Join(bad, "; "))
		}
		return nil
	})
}

// TestOccupancyDetectsOverlap shows that the soak's check can fail: two live exclusive holders are
// caught, readers together are not, and a holder whose ctx has ended (a lost lease) no longer counts.
func TestOccupancyDetectsOverlap(t *testing.T) {
	occ := &occupancy{in: map[string][]*occupant{}}
	live := context.Background()
	if bad, _ := occ.enter("x", live, false, 0, 0); bad {
		t.Fatal("first holder flagged")
	}
	if bad, _ := occ.enter("x", live, false, 0, 0); !bad {
		t.Fatal("second live exclusive holder not flagged")
	}
	if bad, _ := occ.enter("r", live, true, 0, 0); bad {
		t.Fatal("first reader flagged")
	}
	if bad, _ := occ.enter("r", live, true, 0, 0); bad {
		t.Fatal("readers together flagged")
	}
	if bad, _ := occ.enter("r", live, false, 0, 0); !bad {
		t.Fatal("writer among readers not flagged")
	}
	lost, cancel := context.WithCancel(live)
	_, leave := occ.enter("y", lost, false, 0, 0)
	cancel()
	if bad, _ := occ.enter("y", live, false, 0, 0); bad {
		t.Fatal("holder after a lost lease flagged")
	}
	leave()

	// Across a restart: two holders inside at once are checked, not flagged at once. One of them
	// must end with ErrLost in time; when neither does, the overlap is reported.
	var late []string
	var mu sync.Mutex
	occ = &occupancy{in: map[string][]*occupant{}, lostLate: func(name string, _ error) {
		mu.Lock()
		late = append(late, name)
		mu.Unlock()
	}}
	before, lose := context.WithCancelCause(live)
	occ.enter("z", before, false, 0, 0)
	if bad, _ := occ.enter("z", live, false, 1, 1); bad {
		t.Fatal("a holder on the restarted server flagged beside one from before the restart")
	}
	lose(redisync.ErrLost)
	if bad, _ := occ.enter("w", live, false, 0, 0); bad {
		t.Fatal("first holder of w flagged")
	}
	if bad, _ := occ.enter("w", live, false, 0, 1); bad { // acquired across a restart
		t.Fatal("a holder that may have acquired on the restarted server flagged at once")
	}
	occ.wg.Wait()
	if !slices.Equal(late, []string{"w"}) {
		t.Fatalf("reported %v, want w alone (neither of its holders lost it)", late)
	}
	occ.enter("v", live, false, 1, 1)
	if bad, _ := occ.enter("v", live, false, 1, 1); !bad {
		t.Fatal("two live holders that acquired on one server after a restart not flagged")
	}
}
