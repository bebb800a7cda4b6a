package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// line records the order in which waiters acquire, and checks they never overlap.
type line struct {
	t     *testing.T
	sec   testkit.Section
	mu    sync.Mutex
	order []string
	at    map[string]time.Time
	wg    sync.WaitGroup
}

func newLine(t *testing.T) *line { return &line{t: t, at: map[string]time.Time{}} }

// join starts a waiter called who that locks l with ctx, records its turn, holds for hold and
// unlocks. It returns a channel that receives Lock's error (nil once the turn is done).
func (ln *line) join(l *fairlock.Lock, ctx context.Context, who string, hold time.Duration) <-chan error {
	res := make(chan error, 1)
	ln.wg.Add(1)
	go func() {
		defer ln.wg.Done()
		held, err := l.Lock(ctx)
		if err != nil {
			res <- err
			return
		}
		ln.sec.Enter()
		ln.mu.Lock()
		ln.order = append(ln.order, who)
		ln.at[who] = time.Now()
		ln.mu.Unlock()
		time.Sleep(hold)
		ln.sec.Leave()
		res <- l.Unlock(held)
	}()
	return res
}

func (ln *line) check(want ...string) {
	ln.t.Helper()
	ln.wg.Wait()
	if !slices.Equal(ln.order, want) {
		ln.t.Fatalf("acquired in order %v, want %v", ln.order, want)
	}
	if ln.sec.Max() > 1 {
		ln.t.Fatalf("%d holders at once", ln.sec.Max())
	}
}

func (ln *line) when(who string) time.Time {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.at[who]
}

func TestArrivalOrder(t *testing.T) {
	for _, machines := range []int{1, 10} {
		t.Run(fmt.Sprintf("%d clients", machines), func(t *testing.T) {
			testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
				holder := newLock(t, tg.Client(t), name(t))
				held := mustLock(t, holder, context.Background())
				var clients []*redisync.Client
				for i := 0; i < machines; i++ {
					clients = append(clients, tg.Client(t))
				}
				ln := newLine(t)
				var want []string
				for i := 0; i < 10; i++ {
					who := strconv.Itoa(i)
					want = append(want, who)
					ln.join(newLock(t, clients[i%machines], name(t)), context.Background(), who, time.Millisecond)
					// The arrival order is the order of the queue: make sure it is this one.
					waitQueued(t, holder, i+1)
				}
				mustUnlock(t, holder, held)
				ln.check(want...)
				if n := waiting(t, holder); n != 0 {
					t.Fatalf("%d left in the queue", n)
				}
			})
		})
	}
}

// A waiter that gives up (wait bound, or ctx ended) leaves at once: the ones behind it never wait
// for its slot.
func TestGivingUpLeavesTheLine(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const slot = time.Minute // waiting for a given-up slot would be obvious
		opt := fairlock.WithSlot(slot)
		holder := newLock(t, tg.Client(t), name(t), opt)
		held := mustLock(t, holder, context.Background())
		ln := newLine(t)

		a := ln.join(newLock(t, tg.Client(t), name(t), opt), context.Background(), "A", 0)
		waitQueued(t, holder, 1)

		// B's wait bound must outlast B2 and C taking their places behind it, on a busy machine too.
		bound := make(chan error, 1)
		b := newLock(t, tg.Client(t), name(t), opt)
		b2, cl := newLock(t, tg.Client(t), name(t), opt), newLock(t, tg.Client(t), name(t), opt)
		go func() {
			_, err := b.TryLock(context.Background(), 3*time.Second)
			bound <- err
		}()
		waitQueued(t, holder, 2)

		bctx, cancel := context.WithCancel(context.Background())
		cancelled := ln.join(b2, bctx, "B2", 0)
		waitQueued(t, holder, 3)

		c := ln.join(cl, context.Background(), "C", 0)
		waitQueued(t, holder, 4)

		if err := <-bound; !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("B: %v, want ErrNotAcquired", err)
		}
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("B2: %v, want context.Canceled", err)
		}
		// Both left before their calls returned.
		if n := waiting(t, holder); n != 2 {
			t.Fatalf("queue length %d after two waiters gave up, want 2", n)
		}

		released := time.Now()
		mustUnlock(t, holder, held)
		if err := <-a; err != nil {
			t.Fatal(err)
		}
		if err := <-c; err != nil {
			t.Fatal(err)
		}
		ln.check("A", "C")
		if d := ln.when("C").Sub(released); d > slot/3 {
			t.Fatalf("C acquired %v after the release: it waited for a slot given back", d)
		}
	})
}

// When the waiter at the head gives up while the lock is free, the next one is woken at once instead
// of at its next re-check.
func TestHeadGivingUpWakesTheNext(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		opts := []redisync.Option{redisync.WithRecheckInterval(time.Minute)}
		slot := fairlock.WithSlot(time.Minute)
		rdb := tg.Redis(t)
		n := name(t)
		// A holder from elsewhere that never expires and leaves without a word.
		testkit.Do(t, rdb, "HSET", n, "elsewhere:1", "1")
		probe := newLock(t, tg.Client(t), n)

		actx, cancel := context.WithCancel(context.Background())
		a := newLine(t).join(newLock(t, tg.Client(t, opts...), n, slot), actx, "A", 0)
		waitQueued(t, probe, 1)
		ln := newLine(t)
		c := ln.join(newLock(t, tg.Client(t, opts...), n, slot), context.Background(), "C", 0)
		waitQueued(t, probe, 2)

		testkit.Do(t, rdb, "DEL", n) // free, and nobody told
		start := time.Now()
		cancel()
		if err := <-a; !errors.Is(err, context.Canceled) {
			t.Fatalf("A: %v, want context.Canceled", err)
		}
		select {
		case err := <-c:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(15 * time.Second): // C's own re-check is 20 s away
			t.Fatal("C was not woken when the head gave up")
		}
		ln.check("C")
		t.Logf("C acquired %v after A gave up", ln.when("C").Sub(start))
	})
}

// A Java waiter whose process died is passed over once its deadline has passed, and not before
// (Redisson's rule; a Go waiter that died goes sooner: TestDeadGoWaiterPassedOverAtOnce).
func TestDeadWaiterIsPassedOver(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const slot = 2 * time.Second // a Java tryLock(2, SECONDS): its wait slot
		// The holder's lease is part of the Java waiter's deadline (Redisson's estimate): keep it short.
		holder := newLock(t, tg.Client(t), name(t), fairlock.WithLease(2*time.Second))
		held := mustLock(t, holder, context.Background())
		ln := newLine(t)

		java := newJavaFair(t, tg, name(t))
		if ok, _ := java.try(1, slot); ok { // its only try: then the process dies
			t.Fatal("the Java waiter acquired a held lock")
		}
		waitQueued(t, holder, 1)
		c := ln.join(newLock(t, tg.Client(t), name(t)), context.Background(), "C", 0)
		waitQueued(t, holder, 2)

		died := time.Now()
		mustUnlock(t, holder, held)
		// D is at the head. While its deadline is ahead, the line waits for it.
		deadline, _ := deadlineOf(t, tg.Redis(t), holder.Name(), 0)
		select {
		case err := <-c:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(slot + 10*time.Second):
			t.Fatal("C still waits long after the dead waiter's slot")
		}
		if early := deadline.Sub(ln.when("C")); early > 0 {
			t.Fatalf("C acquired %v before the dead waiter's deadline", early)
		}
		t.Logf("C acquired %v after D died (slot %v)", ln.when("C").Sub(died), slot)
		ln.check("C")
		if n := waiting(t, holder); n != 0 {
			t.Fatalf("%d left in the queue", n)
		}
	})
}

// deadlineOf returns the deadline of the waiter at position pos of name's queue, and the server's time.
func deadlineOf(t *testing.T, rdb rueidis.Client, name string, pos int) (deadline, now time.Time) {
	t.Helper()
	who := testkit.DoString(t, rdb, "LINDEX", "redisson_lock_queue:{"+name+"}", strconv.Itoa(pos))
	score := testkit.DoString(t, rdb, "ZSCORE", "redisson_lock_timeout:{"+name+"}", who)
	ms, err := strconv.ParseFloat(score, 64)
	if err != nil {
		t.Fatalf("deadline of %q: %q", who, score)
	}
	return time.UnixMilli(int64(ms)), serverTime(t, rdb, name)
}

func serverTime(t *testing.T, rdb rueidis.Client, key string) time.Time {
	t.Helper()
	// TIME has no key: route it to the node that owns key by asking through a script.
	res, err := rdb.Do(context.Background(), rdb.B().Eval().Script("return redis.call('time')").Numkeys(1).Key(key).Build()).AsStrSlice()
	if err != nil || len(res) != 2 {
		t.Fatalf("TIME: %v %v", res, err)
	}
	s, _ := strconv.ParseInt(res[0], 10, 64)
	us, _ := strconv.ParseInt(res[1], 10, 64)
	return time.Unix(s, us*1000)
}

// A holder whose fixed lease ends is replaced by the head of the queue, and the line goes on in order.
func TestExpiredHolderIsReplacedInOrder(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const lease = 700 * time.Millisecond
		holder := newLock(t, tg.Client(t), name(t), fairlock.WithLease(lease))
		held := mustLock(t, holder, context.Background())
		ln := newLine(t)
		var ends []<-chan error
		for _, who := range []string{"A", "B", "C"} {
			ends = append(ends, ln.join(newLock(t, tg.Client(t), name(t)), context.Background(), who, 0))
			// In line, or through it already if the lease ended meanwhile (a busy machine): either way
			// it arrived before the next one.
			testkit.Eventually(t, 10*time.Second, func() error {
				ln.mu.Lock()
				through := len(ln.order)
				ln.mu.Unlock()
				if got := through + waiting(t, holder); got != len(ends) {
					return fmt.Errorf("%d in line or through it, want %d", got, len(ends))
				}
				return nil
			})
		}
		for _, end := range ends {
			if err := <-end; err != nil {
				t.Fatal(err)
			}
		}
		ln.check("A", "B", "C")
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("holder's cause %v, want ErrLost", context.Cause(held))
		}
		if err := holder.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("late unlock: %v, want ErrNotHeld", err)
		}
	})
}

// ForceUnlock frees the lock and hands it to the head of the queue; the holder learns it lost it.
func TestForceUnlockWakesTheHead(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLock(t, c, name(t))
		held := mustLock(t, l, context.Background())
		ln := newLine(t)
		a := ln.join(newLock(t, tg.Client(t), name(t)), context.Background(), "A", 0)
		waitQueued(t, l, 1)
		if ok, err := l.ForceUnlock(context.Background()); !ok || err != nil {
			t.Fatalf("ForceUnlock: %v %v", ok, err)
		}
		if !errors.Is(context.Cause(held), redisync.ErrLost) {
			t.Fatalf("holder's cause %v, want ErrLost", context.Cause(held))
		}
		if err := <-a; err != nil {
			t.Fatal(err)
		}
		ln.check("A")
		if ok, err := l.ForceUnlock(context.Background()); ok || err != nil {
			t.Fatalf("ForceUnlock of a free lock: %v %v", ok, err)
		}
	})
}

// A queue written by hand as Redisson writes it is honoured both ways: our waiter lines up behind a
// Java waiter and is woken by the Java unlock's message on its own channel, and our unlock wakes a
// Java waiter on its channel.
func TestRedissonQueue(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const javaSlot = 5 * time.Minute // Redisson's default threadWaitTime
		rdb := tg.Redis(t)
		n := name(t)
		queue, timeout := "redisson_lock_queue:{"+n+"}", "redisson_lock_timeout:{"+n+"}"
		channel := "redisson_lock__channel:{" + n + "}"
		defer testkit.Do(t, rdb, "DEL", n, queue, timeout)
		const javaHolder, javaWaiter, javaLate = "5b3c0d5e-java:1", "5b3c0d5e-java:2", "5b3c0d5e-java:3"
		ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
		now := serverTime(t, rdb, n)

		// Java: one thread holds the lock for a minute, another waits in line.
		testkit.Do(t, rdb, "HSET", n, javaHolder, "1")
		testkit.Do(t, rdb, "PEXPIRE", n, ms(time.Minute))
		testkit.Do(t, rdb, "RPUSH", queue, javaWaiter)
		testkit.Do(t, rdb, "ZADD", timeout, strconv.FormatInt(now.Add(time.Minute+javaSlot).UnixMilli(), 10), javaWaiter)

		// Our waiter: no re-check for a minute, so only the message can wake it in time.
		c := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		l := newLock(t, c, n, fairlock.WithSlot(javaSlot))
		ctx := redisync.WithOwner(context.Background())
		id, _ := redisync.OwnerID(ctx)
		ours := c.ID() + ":" + strconv.FormatInt(id, 10)
		ln := newLine(t)
		done := ln.join(l, ctx, "go", 0)
		waitQueued(t, l, 2)
		if got := testkit.DoString(t, rdb, "LINDEX", queue, "1"); got != ours {
			t.Fatalf("second in line %q, want our waiter %q", got, ours)
		}

		// Java: the holder unlocks and the waiter takes its turn, in one script as Redisson's are.
		handoff := `redis.call('del', KEYS[1])
redis.call('lpop', KEYS[2])
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), ARGV[2])
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], ARGV[4])`
		if err := rdb.Do(context.Background(), rdb.B().Eval().Script(handoff).Numkeys(3).Key(n, queue, timeout).
			Arg(javaWaiter, ours, ms(javaSlot), ms(time.Minute)).Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if ln.when("go") != (time.Time{}) {
			t.Fatal("our waiter acquired while the Java waiter held the lock")
		}

		// Java: that thread unlocks and tells the head of the line on its own channel.
		testkit.Do(t, rdb, "DEL", n)
		publish := "PUBLISH"
		if tg.Name == "cluster" {
			publish = "SPUBLISH" // Redisson on a Redis 7 cluster, like us, uses sharded Pub/Sub
		}
		released := time.Now()
		testkit.Do(t, rdb, publish, channel+":"+ours, "0")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("our waiter did not acquire after the Java unlock's message")
		}
		ln.check("go")
		t.Logf("acquired %v after the Java unlock", ln.when("go").Sub(released))

		// The other way: we hold, a Java thread lines up, our unlock tells it on its channel.
		held := mustLock(t, l, context.Background())
		now = serverTime(t, rdb, n)
		testkit.Do(t, rdb, "RPUSH", queue, javaLate)
		testkit.Do(t, rdb, "ZADD", timeout, strconv.FormatInt(now.Add(time.Minute+javaSlot).UnixMilli(), 10), javaLate)
		got := make(chan string, 1)
		subscribed := make(chan struct{})
		rctx, stop := context.WithCancel(context.Background())
		defer stop()
		sub := rdb.B().Subscribe().Channel(channel + ":" + javaLate).Build()
		if tg.Name == "cluster" {
			sub = rdb.B().Ssubscribe().Channel(channel + ":" + javaLate).Build()
		}
		recv := make(chan error, 1)
		go func() {
			hook := rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
				if strings.HasSuffix(s.Kind, "subscribe") && !strings.Contains(s.Kind, "un") {
					close(subscribed)
				}
			})
			recv <- rdb.Receive(hook, sub, func(m rueidis.PubSubMessage) {
				select {
				case got <- m.Message:
				default:
				}
			})
		}()
		select {
		case <-subscribed:
		case <-time.After(10 * time.Second):
			t.Fatal("could not subscribe to the Java waiter's channel")
		}
		mustUnlock(t, l, held)
		select {
		case m := <-got:
			if m != "0" {
				t.Fatalf("the Java waiter got %q, want \"0\"", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("our unlock did not wake the Java waiter at the head")
		}
		stop()
		<-recv
		if locked, _ := l.IsLocked(context.Background()); locked {
			t.Fatal("still locked")
		}
	})
}

// Goroutines that share an owner share its place: one of them giving up does not take it from the
// others.
func TestSharedOwnerKeepsItsPlace(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		holder := newLock(t, tg.Client(t), name(t))
		held := mustLock(t, holder, context.Background())
		l := newLock(t, tg.Client(t), name(t))
		owner := redisync.WithOwner(context.Background())
		ln := newLine(t)
		o := ln.join(l, owner, "owner", 0)
		waitQueued(t, holder, 1)
		c := ln.join(newLock(t, tg.Client(t), name(t)), context.Background(), "C", 0)
		waitQueued(t, holder, 2)
		if _, err := l.TryLock(owner, 300*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("second goroutine of the owner: %v, want ErrNotAcquired", err)
		}
		if n := waiting(t, holder); n != 2 {
			t.Fatalf("queue length %d, want 2: the owner's other goroutine still waits", n)
		}
		mustUnlock(t, holder, held)
		for _, end := range []<-chan error{o, c} {
			if err := <-end; err != nil {
				t.Fatal(err)
			}
		}
		ln.check("owner", "C")
	})
}
