package reliability

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/spinlock"
)

// tag is the hash tag every object of the slot-move tests shares: one slot holds them all.
const tag = "{mig}"

// TestSlotMoveUnderContention moves the slot that holds every primitive back and forth between the
// three masters of a cluster, key by key and in one MIGRATE of all keys, while several Clients
// contend on each primitive: rlock, spin lock, fair lock, both sides of a read-write lock, semaphore,
// expirable semaphore, countdown latch, rate limiter, MultiLock, RedLock and group lock. Scripts on a
// slot in migration are refused (TRYAGAIN, or ASK): each call must ride through within its bound.
// No two holders may overlap inside a critical section, no caller may get an error the README does
// not promise (a wait bound that passed is the only one), and afterwards Redis must hold every lock
// free, every permit back and no place in the fair queue.
func TestSlotMoveUnderContention(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	rdb := tg.Redis(t)
	opts := []redisync.Option{redisync.WithRecheckInterval(time.Second)}
	clients := []*redisync.Client{tg.Client(t, opts...), tg.Client(t, opts...), tg.Client(t, opts...)}
	slot := int(send.Slot(tag))
	const permits, rate = 2, 1000
	const window = time.Second // the rate limiter's
	setup := context.Background()
	if _, err := must1(semaphore.New(clients[0], tag+"sem")).TrySetPermits(setup, permits); err != nil {
		t.Fatal(err)
	}
	if _, err := must1(semaphore.NewExpirable(clients[0], tag+"exp")).TrySetPermits(setup, permits); err != nil {
		t.Fatal(err)
	}
	if _, err := must1(ratelimit.New(clients[0], tag+"rate")).TrySetRate(setup, ratelimit.Config{Rate: rate, Interval: window}); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w := &workload{t: t, occ: &occupancy{in: map[string][]*occupant{}}}
	w.run(ctx, clients, permits)

	// The moves: to the next master each time, so that the slot goes round and comes back; each
	// kind of move as often, with a pause between the steps of some so that the calls meet the
	// migration's refusals for a while.
	moves := map[string]int{}
	var longest time.Duration
	for i := 0; i < 12 || time.Since(w.start) < 3*time.Second; i++ {
		from, err := cl.SlotOwner(setup, slot)
		if err != nil {
			t.Fatal(err)
		}
		to := cl.Masters[(slices.Index(cl.Masters, from)+1)%len(cl.Masters)]
		how := redistest.SlotMove{PerKey: i%2 == 0}
		if i%4 >= 2 {
			how.Pause = 20 * time.Millisecond
		}
		began := time.Now()
		if err := cl.MoveSlot(setup, slot, to, how); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(began))
		moves[how.String()]++
		time.Sleep(100 * time.Millisecond) // let the calls run on the new master too
	}
	stop()
	w.wait()
	t.Logf("slot moves %v (the longest %v) under %d operations; %d waits ran out; the slowest release took %v",
		moves, longest.Round(time.Millisecond), w.ops.Load(), w.timeouts.Load(), time.Duration(w.slowest.Load()).Round(time.Millisecond))
	if w.ops.Load() == 0 {
		t.Fatal("no operation succeeded")
	}
	w.requireFree(rdb, must1(ratelimit.New(clients[0], tag+"rate")), permits, rate, window)
}

// workload contends on every primitive (names under tag) from several Clients, and checks what each
// caller sees.
type workload struct {
	t        *testing.T
	occ      *occupancy
	start    time.Time
	wg       sync.WaitGroup
	ops      atomic.Int64
	timeouts atomic.Int64 // waits whose bound passed: the one error the callers may see
	slowest  atomic.Int64 // the longest release (Unlock, Release, CountDown), in ns
	mu       sync.Mutex
	errs     map[string]int
}

// call counts the outcome of one call: nil, a wait bound that passed, or an error no caller should
// see, which fails the test.
func (w *workload) call(what string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, redisync.ErrNotAcquired):
		w.timeouts.Add(1)
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.errs == nil {
		w.errs = map[string]int{}
	}
	if w.errs[what]++; w.errs[what] <= 3 {
		w.t.Errorf("%s: %v", what, err)
	}
	return false
}

// inside runs a critical section of name, in which overlap is checked.
func (w *workload) inside(name string, held context.Context, shared bool) {
	bad, leave := w.occ.enter(name, held, shared, 0, 0)
	if bad {
		w.t.Errorf("%s: entered while another live holder was inside", name)
	}
	time.Sleep(time.Millisecond)
	leave()
	w.ops.Add(1)
}

// timed runs release, a call that does not wait, and keeps the longest it took.
func (w *workload) timed(release func() error) error {
	start := time.Now()
	err := release()
	d := int64(time.Since(start))
	for {
		m := w.slowest.Load()
		if d <= m || w.slowest.CompareAndSwap(m, d) {
			return err
		}
	}
}

type lockable interface {
	TryLock(context.Context, time.Duration) (context.Context, error)
	Unlock(context.Context) error
}

const mwait = 3 * time.Second // a contended wait's bound: slot moves take a fraction of it

// run starts the callers: on each Client, one loop per primitive (two readers and a writer for the
// read-write lock) until ctx ends.
func (w *workload) run(ctx context.Context, clients []*redisync.Client, permits int64) {
	w.start = time.Now()
	loop := func(fn func()) {
		w.wg.Go(func() {
			for ctx.Err() == nil {
				fn()
			}
		})
	}
	hold := func(name, what string, l lockable, shared bool) {
		held, err := l.TryLock(context.Background(), mwait)
		if !w.call(what+" TryLock", err) {
			return
		}
		w.inside(name, held, shared)
		w.call(what+" Unlock", w.timed(func() error { return l.Unlock(held) }))
	}
	var semOut, expOut atomic.Int64
	for i, c := range clients {
		rl := must1(rlock.New(c, tag+"rlock"))
		loop(func() { hold(rl.Name(), "rlock", rl, false) })
		sl := must1(spinlock.New(c, tag+"spin"))
		loop(func() { hold(sl.Name(), "spin lock", sl, false) })
		fl := must1(fairlock.New(c, tag+"fair"))
		loop(func() { hold(fl.Name(), "fair lock", fl, false) })
		rw := must1(rwlock.New(c, tag+"rw"))
		loop(func() { hold(rw.Name(), "read lock", rw.ReadLock(), true) })
		if i == 0 {
			loop(func() { hold(rw.Name(), "write lock", rw.WriteLock(), false) })
		}
		ml := must1(multilock.New(must1(rlock.New(c, tag+"ml-a")), must1(rlock.New(c, tag+"ml-b"))))
		loop(func() { hold("multilock", "MultiLock", ml, false) })
		var subs []multilock.Locker
		for j := range 3 {
			subs = append(subs, must1(rlock.New(c, tag+"red-"+strconv.Itoa(j))))
		}
		red := must1(multilock.NewRedLock(subs...))
		loop(func() { hold("redlock", "RedLock", red, false) })
		g := must1(multilock.NewGroup(c, tag+"group", []string{"a", "b"}))
		loop(func() { hold("group", "group lock", g, false) })

		sem := must1(semaphore.New(c, tag+"sem"))
		loop(func() {
			if !w.call("semaphore TryAcquire", sem.TryAcquire(context.Background(), 1, mwait)) {
				return
			}
			if n := semOut.Add(1); n > permits {
				w.t.Errorf("%d semaphore permits out, %d exist", n, permits)
			}
			time.Sleep(time.Millisecond)
			semOut.Add(-1)
			w.ops.Add(1)
			w.call("semaphore Release", w.timed(func() error { return sem.Release(context.Background(), 1) }))
		})
		exp := must1(semaphore.NewExpirable(c, tag+"exp"))
		loop(func() {
			ids, err := exp.TryAcquire(context.Background(), 1, mwait)
			if !w.call("expirable TryAcquire", err) {
				return
			}
			if n := expOut.Add(1); n > permits {
				w.t.Errorf("%d expirable permits out, %d exist", n, permits)
			}
			time.Sleep(time.Millisecond)
			expOut.Add(-1)
			w.ops.Add(1)
			w.call("expirable Release", w.timed(func() error { return exp.Release(context.Background(), ids...) }))
		})
		lim := must1(ratelimit.New(c, tag+"rate"))
		loop(func() {
			if w.call("rate limiter TryAcquire", lim.TryAcquire(context.Background(), 1, mwait)) {
				w.ops.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		})
	}
	// A latch counted down by one Client and awaited by the others, again and again.
	latch := must1(countdown.New(clients[0], tag+"latch"))
	loop(func() {
		if ok, err := latch.TrySetCount(context.Background(), 2); !w.call("latch TrySetCount", err) || !ok {
			return
		}
		opened := make(chan error, len(clients)-1)
		for _, c := range clients[1:] {
			l := must1(countdown.New(c, tag+"latch"))
			go func() { opened <- l.TryAwait(context.Background(), 10*time.Second) }()
		}
		for want := int64(1); want >= 0; want-- {
			if !w.call("latch CountDown", w.timed(func() error { return latch.CountDown(context.Background()) })) {
				continue
			}
			if n, err := latch.Count(context.Background()); w.call("latch Count", err) && n != want {
				w.t.Errorf("latch count %d after a CountDown, want %d: counted down twice", n, want)
			}
		}
		for range clients[1:] {
			if err := <-opened; errors.Is(err, redisync.ErrNotAcquired) {
				w.t.Errorf("latch not opened within 10 s of its last CountDown")
			} else {
				w.call("latch TryAwait", err)
			}
		}
		w.ops.Add(1)
	})
}

func (w *workload) wait() { w.wg.Wait() }

// requireFree checks what Redis holds once the callers have stopped: every lock free, nobody queued,
// every permit back, and the rate limiter's window whole again once its grants have left it.
func (w *workload) requireFree(rdb rueidis.Client, lim *ratelimit.Limiter, permits, rate int64, window time.Duration) {
	t := w.t
	t.Helper()
	read := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := rdb.Do(ctx, rdb.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build()).ToMessage()
		if err != nil && !rueidis.IsRedisNil(err) {
			return "", err
		}
		return render(m), nil
	}
	// A give-back or a leave still under way finishes within the library's bounds; holds lost to
	// nothing here: nothing stalls, so no lease runs out.
	testkit.Eventually(t, 15*time.Second, func() error {
		var bad []string
		for _, key := range []string{tag + "rlock", tag + "spin", tag + "fair", "redisson_lock_queue:" + tag + "fair",
			"redisson_lock_timeout:" + tag + "fair", tag + "rw", tag + "ml-a", tag + "ml-b", tag + "red-0", tag + "red-1",
			tag + "red-2", tag + "group", "redisync_semaphore_grants:" + tag + "sem", tag + "exp:timeout", tag + "latch"} {
			if n, err := read("EXISTS", key); err != nil || n != "0" {
				bad = append(bad, fmt.Sprintf("%s is still there (%v)", key, err))
			}
		}
		for _, key := range []string{tag + "sem", tag + "exp"} {
			if n, err := read("GET", key); err != nil || n != strconv.FormatInt(permits, 10) {
				bad = append(bad, fmt.Sprintf("%s holds %q permits, want %d (%v)", key, n, permits, err))
			}
		}
		if keys, err := read("KEYS", tag+"rw:*:rwlock_timeout:*"); err != nil || keys != "[]" {
			bad = append(bad, fmt.Sprintf("read leases are still there: %q (%v)", keys, err))
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	})
	// The rate limiter: once every grant has left the window, all of its permits are back (a grant
	// made twice would have charged twice, and come back as well: what is checked is that none is
	// left over, or lost).
	testkit.Eventually(t, window+10*time.Second, func() error {
		n, err := lim.Available(context.Background())
		if err == nil && n != rate {
			err = fmt.Errorf("rate limiter has %d permits, want %d once its window has passed", n, rate)
		}
		return err
	})
}

// must1 returns v, and panics on err: for constructors given valid arguments.
func must1[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestWaitersParkedAcrossSlotMove: waiters of every kind parked behind holds whose slot then moves to
// another master, key by key and in one MIGRATE. Redis 7 ends the sharded subscriptions of a slot
// that leaves a master (an sunsubscribe push); the notifier must subscribe again on the new master at
// once, and wake its waiters to try, rather than wait for rueidis to refresh its slot map (up to a
// second later: until then it sends each SSUBSCRIBE to the old master, which refuses it with MOVED,
// again and again). Every waiter acquires after the release, and the old masters refused at most one
// SSUBSCRIBE per channel and move (a move that races with a resubscription).
func TestWaitersParkedAcrossSlotMove(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	slot := int(send.Slot(tag))
	for i, how := range []redistest.SlotMove{{PerKey: true}, {}} {
		t.Run(how.String(), func(t *testing.T) {
			holder := tg.Client(t, parkedOpts...)
			waiting := []*redisync.Client{tg.Client(t, parkedOpts...), tg.Client(t, parkedOpts...)}
			prefix := tag + strconv.Itoa(i)
			p := park(t, cl.Servers(), holder, waiting, prefix)
			from, err := cl.SlotOwner(context.Background(), slot)
			if err != nil {
				t.Fatal(err)
			}
			to := cl.Masters[(slices.Index(cl.Masters, from)+1)%len(cl.Masters)]
			refused := rejected(t, cl.Masters, "ssubscribe")
			start := time.Now()
			if err := cl.MoveSlot(context.Background(), slot, to, how); err != nil {
				t.Fatal(err)
			}
			moved := time.Now()
			released := p.release()
			last := p.await(moved, 10*time.Second)
			// The subscriptions: each waiting Client's rlock, fair lock and semaphore channels and its
			// two wake channels.
			channels := 5 * len(waiting)
			if n := rejected(t, cl.Masters, "ssubscribe") - refused; n > int64(channels) {
				t.Errorf("the masters refused %d SSUBSCRIBE after the move (MOVED), %d channels were subscribed again", n, channels)
			}
			t.Logf("%s: moved in %v; all %d waiters acquired %v after the move (%v after the holder's release)",
				how, moved.Sub(start).Round(time.Millisecond), p.waiters, last.Sub(moved).Round(time.Millisecond), last.Sub(released).Round(time.Millisecond))
		})
	}
}

// rejected sums, over servers, how many times cmd was refused before it ran (INFO commandstats
// rejected_calls: a cluster redirection counts).
func rejected(t *testing.T, servers []*redistest.Server, cmd string) int64 {
	t.Helper()
	var total int64
	for _, s := range servers {
		out, err := s.Do("INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			stats, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(stats, ",") {
				if v, ok := strings.CutPrefix(kv, "rejected_calls="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					total += n
				}
			}
		}
	}
	return total
}

// moveSlowly starts moving tag's slot to the next master, keeping it in migration for about pause
// twice over (before its keys move, and after), and returns once scripts on it meet TRYAGAIN; done
// receives the move's outcome.
func moveSlowly(t *testing.T, cl *redistest.Cluster, pause time.Duration) (done <-chan error) {
	t.Helper()
	slot := int(send.Slot(tag))
	from, err := cl.SlotOwner(context.Background(), slot)
	if err != nil {
		t.Fatal(err)
	}
	to := cl.Masters[(slices.Index(cl.Masters, from)+1)%len(cl.Masters)]
	ch := make(chan error, 1)
	go func() { ch <- cl.MoveSlot(context.Background(), slot, to, redistest.SlotMove{Pause: pause}) }()
	testkit.Eventually(t, 5*time.Second, func() error {
		if !cl.Migrating(context.Background(), slot) {
			return errors.New("the slot is not migrating yet")
		}
		return nil
	})
	return ch
}

// TestFairLeaveAcrossSlotMove: a fair lock waiter whose wait fails while its slot is in migration
// leaves the queue all the same. Its tries, and then its leave, meet TRYAGAIN, as every script on the
// slot does until the move ends. A leave sent once and dropped keeps the waiter's place, with a
// deadline minutes away (the default wait slot is 5 minutes), until a later call finds that nobody
// listens for it any more, or, for a place its first try took before the waiter listened, until the
// deadline: every waiter behind it and every fresh TryLock are refused meanwhile. The leave is sent
// again until it lands: the place is gone once the move ends, while the lock is still held and
// nothing else has touched the queue.
func TestFairLeaveAcrossSlotMove(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	holder, waiter, fresh := tg.Client(t), tg.Client(t), tg.Client(t)
	name := tag + "leave"
	l := must1(fairlock.New(holder, name))
	held, err := l.TryLock(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	gaveUp := make(chan error, 1)
	go func() {
		_, err := must1(fairlock.New(waiter, name)).TryLock(context.Background(), time.Second)
		gaveUp <- err
	}()
	rdb := tg.Redis(t)
	queue := core.Of(holder).Names().Prefixed("redisson_lock_queue", name)
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := testkit.DoString(t, rdb, "LLEN", queue); n != "1" {
			return fmt.Errorf("%s holds %s waiters, want 1", queue, n)
		}
		return nil
	})
	moved := moveSlowly(t, cl, 2*time.Second) // the waiter's wait ends during the migration
	if err := <-gaveUp; !errors.Is(err, redisync.ErrNotAcquired) {
		t.Errorf("waiter's TryLock: %v, want ErrNotAcquired", err)
	}
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := testkit.DoString(t, rdb, "EXISTS", queue); n != "0" {
			return fmt.Errorf("the waiter that gave up is still in line: %s", testkit.DoString(t, rdb, "LRANGE", queue, "0", "-1"))
		}
		return nil
	})
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	other := must1(fairlock.New(fresh, name))
	h, err := other.TryLock(context.Background(), 0)
	if err != nil {
		t.Fatalf("fresh TryLock(0) after the release: %v", err)
	}
	if err := other.Unlock(h); err != nil {
		t.Fatal(err)
	}
}

// TestLostReplyResentIntoSlotMove: a lock try that Redis ran but whose reply was lost is sent again
// (as its Resent variant) while its slot has started to migrate, and Redis refuses that send with
// TRYAGAIN. The refusal says nothing about the first send, which acquired: the try keeps being sent
// until the move ends, and then learns that it holds the lock. Returning the refusal would leave the
// lock held by nobody until its lease ended.
func TestLostReplyResentIntoSlotMove(t *testing.T) {
	cl := redistest.StartProxiedCluster(t, 3, 0)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	c := tg.Client(t)
	name := tag + "resent"
	l := must1(rlock.New(c, name))
	owner, err := cl.SlotOwner(context.Background(), int(send.Slot(tag)))
	if err != nil {
		t.Fatal(err)
	}
	proxy := cl.Proxies[slices.Index(cl.Servers(), owner)]
	f := cl.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: name})
	t.Cleanup(f.Release)
	got := testkit.Background(func() (context.Context, error) { return l.TryLock(context.Background(), 0) })
	if !f.Wait(5 * time.Second) {
		t.Fatal("the try did not reach Redis")
	}
	moved := moveSlowly(t, cl, time.Second)
	proxy.Drop() // the reply is lost: the try is sent again, into the migration
	held := testkit.Await(t, got, "TryLock whose reply was lost")
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if n, err := l.HoldCount(held); err != nil || n != 1 {
		t.Fatalf("hold count %d (%v), want 1: the first send acquired, the one sent again must not have", n, err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if n := testkit.DoString(t, tg.Redis(t), "EXISTS", name); n != "0" {
		t.Fatalf("lock still there after its Unlock: EXISTS %s", n)
	}
}
