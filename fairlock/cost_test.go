package fairlock_test

import (
	"context"
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
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// commands returns how many scripts and subscription commands every node of tg has run: what a
// client sends to acquire, release and wait (the commands a script makes inside are not counted).
func commands(t testing.TB, tg *testkit.Target) int64 {
	t.Helper()
	return tg.Calls(t, "evalsha", "eval", "subscribe", "unsubscribe", "ssubscribe", "sunsubscribe")
}

// subscribed returns how many waiter channels of lock name are subscribed on tg.
func subscribed(t testing.TB, tg *testkit.Target, name string) int {
	t.Helper()
	n := 0
	for _, s := range tg.Servers {
		for _, cmd := range []string{"CHANNELS", "SHARDCHANNELS"} {
			out, err := s.Do("PUBSUB", cmd, "redisson_lock__channel:{"+name+"}:*")
			if err != nil {
				t.Fatal(err)
			}
			if out = strings.TrimSpace(out); out != "" {
				n += len(strings.Split(out, "\n"))
			}
		}
	}
	return n
}

// An unlock hands the lock to the head of the line and wakes nobody else: a handoff costs the same
// few commands whatever the number of waiters, and waiters further back neither poll nor re-check
// meanwhile.
func TestHandoffWakesOnlyTheHead(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const waiters = 10
		opts := []redisync.Option{redisync.WithRecheckInterval(time.Minute)}
		slot := fairlock.WithSlot(time.Minute)
		holder := newLock(t, tg.Client(t, opts...), name(t), slot)
		held := mustLock(t, holder, context.Background())
		joined := commands(t, tg)
		ln := newLine(t)
		var want []string
		for i := 0; i < waiters; i++ {
			who := strconv.Itoa(i)
			want = append(want, who)
			ln.join(newLock(t, tg.Client(t, opts...), name(t), slot), context.Background(), who, 0)
			waitQueued(t, holder, i+1)
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := subscribed(t, tg, name(t)); n != waiters {
				return errorf("%d waiter channels subscribed, want %d", n, waiters)
			}
			return nil
		})
		// Each waiter tries, subscribes, and tries again once subscribed (a release in between would
		// otherwise go unseen); then it waits without a command.
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := commands(t, tg) - joined; n < 3*waiters {
				return errorf("%d commands from %d waiters, want 3 each", n, waiters)
			}
			return nil
		})
		before := commands(t, tg)
		mustUnlock(t, holder, held)
		ln.check(want...)
		per := float64(commands(t, tg)-before-1) / waiters
		t.Logf("%.2f commands per acquisition with %d waiters", per, waiters)
		// The release hands the lock over, and the waiter's channel is unsubscribed: 2. Waking the head
		// costs its try too (3); waking every waiter, or polling, several per waiter.
		if per > 2 {
			t.Fatalf("%.2f commands per acquisition, want at most 2", per)
		}
	})
}

// BenchmarkHandoff is B5's workload (BENCHMARKS.md) on one standalone server: 8 clients, one fair
// lock, an empty critical section. It reports handoffs (the previous holder starts Unlock -> the next
// holder's Lock returns) p50/p99 in microseconds, scripts and subscription commands per acquisition,
// what Redis runs per acquisition (srv-calls/acq, scripts' own calls included), and the most holders
// ever inside at once (must be 1).
func BenchmarkHandoff(b *testing.B) {
	tg := testkit.Standalone(b)
	const clients = 8
	var locks []*fairlock.Lock
	for i := 0; i < clients; i++ {
		c, err := redisync.New(rueidisOption(tg))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		l, err := fairlock.New(c, "fairlock:bench")
		if err != nil {
			b.Fatal(err)
		}
		locks = append(locks, l)
	}
	var (
		sec      testkit.Section
		released atomic.Int64 // when the last holder started to unlock, unix ns; 0 before the first
		mu       sync.Mutex
		handoffs []time.Duration
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	before, beforeAll := commands(b, tg), serverCalls(b, tg)
	b.ResetTimer()
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				held, err := l.Lock(context.Background())
				if err != nil {
					b.Error(err)
					return
				}
				now := time.Now()
				sec.Enter()
				if r := released.Load(); r != 0 {
					mu.Lock()
					handoffs = append(handoffs, now.Sub(time.Unix(0, r)))
					mu.Unlock()
				}
				sec.Leave()
				released.Store(time.Now().UnixNano())
				if err := l.Unlock(held); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(handoffs)
	if len(handoffs) > 0 {
		b.ReportMetric(float64(handoffs[len(handoffs)/2].Microseconds()), "handoff-p50-us")
		b.ReportMetric(float64(handoffs[len(handoffs)*99/100].Microseconds()), "handoff-p99-us")
	}
	b.ReportMetric(float64(commands(b, tg)-before)/float64(b.N), "cmds/acq")
	b.ReportMetric(float64(serverCalls(b, tg)-beforeAll-2)/float64(b.N), "srv-calls/acq")
	b.ReportMetric(float64(sec.Max()), "max-holders")
	if sec.Max() > 1 {
		b.Fatalf("%d holders at once", sec.Max())
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func rueidisOption(tg *testkit.Target) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true}
}

// BenchmarkRedissonLineCalls drives Redisson's own fair lock scripts raw through the steady state of
// B5's workload (8 threads, one lock, an empty critical section): the holder unlocks, the head of the
// line acquires with its try on being woken, and the old holder joins the end of the line with a
// Java thread's two tries (before and after subscribing). It reports what Redis runs per acquisition,
// the scripts' own calls included (srv-calls/acq): the figure B5 reports for package fairlock.
func BenchmarkRedissonLineCalls(b *testing.B) {
	tg := testkit.Own(b)
	j := newJavaFair(b, tg, "fairlock:redisson-line")
	const threads = 8
	if ok, _ := j.try(0, 0); !ok {
		b.Fatal("the first thread did not acquire a free lock")
	}
	line := []int64{}
	for th := int64(1); th < threads; th++ {
		if ok, _ := j.try(th, 0); ok {
			b.Fatal("a thread acquired a held lock")
		}
		line = append(line, th)
	}
	holder := int64(0)
	before := serverCalls(b, tg)
	b.ResetTimer()
	for range b.N {
		j.unlock(holder)
		head := line[0]
		if ok, _ := j.try(head, 0); !ok {
			b.Fatalf("the head of the line (%d) did not acquire after the unlock", head)
		}
		for range 2 {
			if ok, _ := j.try(holder, 0); ok {
				b.Fatal("the old holder acquired while another held the lock")
			}
		}
		line = append(line[1:], holder)
		holder = head
	}
	b.StopTimer()
	b.ReportMetric(float64(serverCalls(b, tg)-before-1)/float64(b.N), "srv-calls/acq")
}

// serverCalls returns how many commands the nodes of tg have run, of every kind, INFO included.
func serverCalls(t testing.TB, tg *testkit.Target) int64 {
	t.Helper()
	var total int64
	for _, s := range tg.Servers {
		out, err := s.Do("INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			_, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(stats, ",")
			n, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
	}
	return total
}
