package rlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// javaLock plays a Redisson 3.x/4.x process using RLock on one name: Redisson's scripts (written here
// from RedissonLock's protocol), keys, channel and message, and its waiting loop (RedissonLock.lock):
// a try, a subscription to the lock's channel, then a try on every message or when the holder's
// lease may have ended.
type javaLock struct {
	t       *testing.T
	rdb     rueidis.Client
	cluster bool
	name    string
	id      string
	lease   string // ms: RedissonLock's internalLockLeaseTime, the watchdog's or lock(leaseTime)'s
}

func newJavaLock(t *testing.T, tg *testkit.Target, name string) *javaLock {
	return &javaLock{t: t, rdb: tg.Redis(t), cluster: tg.Name == "cluster", name: name,
		id: "7c2e9f10-java-4d2b-8a1f-" + strconv.FormatInt(time.Now().UnixNano()%1e12, 10), lease: "30000"}
}

const javaLockAcquire = `
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`

const javaLockRelease = `
local val = redis.call('get', KEYS[3])
if val ~= false then return tonumber(val) end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
else
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return 1
end`

func (j *javaLock) field(thread int64) string { return j.id + ":" + strconv.FormatInt(thread, 10) }
func (j *javaLock) channel() string           { return "redisson_lock__channel:{" + j.name + "}" }

func (j *javaLock) try(thread int64) (bool, int64) {
	res := j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(javaLockAcquire).Numkeys(1).Key(j.name).
		Arg(j.lease, j.field(thread)).Build())
	ttl, err := res.AsInt64()
	if rueidis.IsRedisNil(err) {
		return true, 0
	}
	if err != nil {
		j.t.Errorf("java acquire: %v", err)
	}
	return false, ttl
}

func (j *javaLock) unlock(thread int64) {
	publish := "publish"
	if j.cluster {
		publish = "spublish"
	}
	latch := "redisson_unlock_latch:{" + j.name + "}:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	err := j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(javaLockRelease).Numkeys(3).
		Key(j.name, j.channel(), latch).Arg("0", j.lease, j.field(thread), publish, "60000").Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		j.t.Errorf("java unlock: %v", err)
	}
}

// lock waits as RedissonLock.lock() does, calling subscribed once its channel is subscribed, until
// it acquires or ctx ends (false).
func (j *javaLock) lock(ctx context.Context, thread int64, subscribed func()) bool {
	if ok, _ := j.try(thread); ok {
		return true
	}
	sub := j.rdb.B().Subscribe().Channel(j.channel()).Build()
	if j.cluster {
		sub = j.rdb.B().Ssubscribe().Channel(j.channel()).Build()
	}
	rctx, cancel := context.WithCancel(context.Background())
	msgs := make(chan string, 64)
	ready := make(chan struct{})
	var once sync.Once
	hook := rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
		if strings.HasSuffix(s.Kind, "subscribe") && !strings.Contains(s.Kind, "un") {
			once.Do(func() { close(ready) })
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.rdb.Receive(hook, sub, func(m rueidis.PubSubMessage) {
			select {
			case msgs <- m.Message:
			default:
			}
		})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		j.t.Error("java waiter could not subscribe")
		return false
	}
	subscribed()
	for {
		ok, ttl := j.try(thread)
		if ok {
			return true
		}
		d := time.Duration(ttl) * time.Millisecond
		if ttl < 0 {
			d = time.Hour
		}
		select {
		case <-msgs:
		case <-time.After(d):
		case <-ctx.Done():
			return false
		}
	}
}

// Two Go clients releasing and locking again back to back, each waiting while the other holds,
// never leave the lock free for long: a release hands it to the other's recorded waiter. A Java
// waiter beside them, which leaves no record, still gets the lock within a few of their releases.
func TestJavaWaiterNotStarvedByHandOvers(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		n := "java-turn"
		java := newJavaLock(t, tg, n)
		var sec testkit.Section
		var releases atomic.Int64
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { stop(); wg.Wait() }()
		for range 2 {
			l := newLock(t, tg.Client(t), n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					held, err := l.Lock(ctx)
					if err != nil {
						if ctx.Err() == nil {
							t.Error(err)
						}
						return
					}
					sec.Enter()
					time.Sleep(2 * time.Millisecond) // long enough for the other client to be waiting
					sec.Leave()
					if err := l.Unlock(held); err != nil {
						t.Error(err)
						return
					}
					releases.Add(1)
				}
			}()
		}
		// Both Go clients contend, with records, before the Java waiter comes.
		testkit.Eventually(t, 10*time.Second, func() error {
			if releases.Load() < 20 {
				return errorf("%d releases so far", releases.Load())
			}
			return nil
		})
		var from int64
		jctx, jstop := context.WithTimeout(ctx, 30*time.Second)
		defer jstop()
		if !java.lock(jctx, 1, func() { from = releases.Load() }) {
			t.Fatalf("the Java waiter did not acquire in 30 s (%d releases by the Go clients)", releases.Load()-from)
		}
		sec.Enter()
		took := releases.Load() - from
		sec.Leave()
		java.unlock(1)
		stop()
		wg.Wait()
		t.Logf("the Java waiter acquired after %d releases by the Go clients", took)
		if took > 40 {
			t.Fatalf("the Java waiter acquired after %d releases by the Go clients, want a few", took)
		}
		if sec.Max() != 1 {
			t.Fatalf("%d owners inside at once", sec.Max())
		}
	})
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// A Java waiter already waiting when Go clients start to contend after a quiet spell still gets the
// lock within a few of their releases: each Client lists itself among the lock's clients before it
// listens on the lock's channel, so the Java waiter, and it alone, counts beyond them.
func TestJavaWaiterNotStarvedByBurst(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		n := "java-burst"
		java := newJavaLock(t, tg, n)
		holder := newLock(t, tg.Client(t), n)
		held := mustLock(t, holder, context.Background())
		var sec testkit.Section
		var releases atomic.Int64
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { stop(); wg.Wait() }()

		jctx, jstop := context.WithTimeout(ctx, 30*time.Second)
		defer jstop()
		subscribed, took := make(chan struct{}), make(chan int64, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !java.lock(jctx, 1, func() { close(subscribed) }) {
				took <- -1
				return
			}
			sec.Enter()
			took <- releases.Load()
			sec.Leave()
			java.unlock(1)
		}()
		<-subscribed // and its try after that finds the lock held: it waits for a message

		const clients = 4
		for range clients {
			l := newLock(t, tg.Client(t), n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					h, err := l.Lock(ctx)
					if err != nil {
						if ctx.Err() == nil {
							t.Error(err)
						}
						return
					}
					sec.Enter()
					time.Sleep(time.Millisecond)
					sec.Leave()
					if err := l.Unlock(h); err != nil {
						t.Error(err)
						return
					}
					releases.Add(1)
				}
			}()
		}
		waiters(t, tg, n, clients) // every Go client waits, listed and listening, fresh
		mustUnlock(t, holder, held)
		r := <-took
		if r < 0 {
			t.Fatalf("the Java waiter did not acquire in 30 s (%d releases by the Go clients)", releases.Load())
		}
		stop()
		wg.Wait()
		t.Logf("the Java waiter acquired after %d releases by the Go clients", r)
		if r > 40 {
			t.Fatalf("the Java waiter acquired after %d releases by the Go clients, want a few", r)
		}
		if sec.Max() != 1 {
			t.Fatalf("%d owners inside at once", sec.Max())
		}
	})
}

// A Java waiter's turn that nobody takes (a subscriber on the shared channel that never tries) keeps
// our acquisitions off the free lock for a moment only.
func TestJavaTurnNotTakenPassesOn(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		n := "java-turn-idle"
		turns := "redisync_lock_waiters:{" + n + "}"
		stop := newJavaLock(t, tg, n).listen()
		defer stop()

		holder := newLock(t, tg.Client(t), n)
		held := mustLock(t, holder, context.Background())
		wl := newLock(t, tg.Client(t, slow), n)
		w := waitFor(wl)
		waiters(t, tg, n, 1)
		mustUnlock(t, holder, held) // hands over to w, and owes the next turn to the listener
		got := testkit.Await(t, w, "the recorded waiter")
		if testkit.DoString(t, tg.Redis(t), "ZSCORE", turns, "~owed") == "" {
			t.Fatal("a hand-over beside a Java listener left no turn owed")
		}
		mustUnlock(t, wl, got) // the listener's turn: nobody takes it
		if testkit.DoString(t, tg.Redis(t), "ZSCORE", turns, "~owed") != "" {
			t.Fatal("the release did not give the owed turn")
		}
		again := testkit.Await(t, waitFor(holder), "a Lock after an untaken Java turn")
		mustUnlock(t, holder, again)
	})
}

// listen subscribes to the lock's channel as a Java waiter would, and never tries.
func (j *javaLock) listen() (stop func()) {
	sub := j.rdb.B().Subscribe().Channel(j.channel()).Build()
	if j.cluster {
		sub = j.rdb.B().Ssubscribe().Channel(j.channel()).Build()
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	var once sync.Once
	hook := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if strings.HasSuffix(s.Kind, "subscribe") && !strings.Contains(s.Kind, "un") {
			once.Do(func() { close(ready) })
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.rdb.Receive(hook, sub, func(rueidis.PubSubMessage) {})
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		j.t.Error("java listener could not subscribe")
	}
	return func() { cancel(); <-done }
}

// javaFencedAcquire is RedissonFencedLock's tryLockInnerAsync: it INCRs the counter that this
// package's fenced locks INCR too, and answers {-1, token} when acquired.
const javaFencedAcquire = `
if (redis.call('exists', KEYS[1]) == 0 or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  local token = redis.call('incr', KEYS[2]);
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return {-1, token};
end;
return {redis.call('pttl', KEYS[1]), -1};`

// A counter that is missing (never used, or lost with a restart without persistence) starts from
// the server's clock in microseconds, and Redisson's fenced lock goes on from there: Go and Java
// acquisitions of one name share one sequence of tokens, each above the one before, and Redisson's
// getToken reads the last. A Java acquisition that finds the counter missing starts it at 1, as
// Redisson does; Go acquisitions go on above that.
func TestJavaFencedLockSharesTheSeededCounter(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		l := newLock(t, c, "java-fenced", rlock.WithFencing())
		j := newJavaLock(t, tg, "java-fenced")
		rdb := tg.Redis(t)
		counter := "redisson_lock_token:{java-fenced}"
		t.Cleanup(func() { testkit.Do(t, rdb, "DEL", counter) })
		serverMicros := func() int64 {
			tm, err := rdb.Do(context.Background(), rdb.B().Time().Build().SetSlot(counter)).AsIntSlice()
			if err != nil {
				t.Fatal(err)
			}
			return tm[0]*1e6 + tm[1]
		}
		goToken := func() int64 {
			t.Helper()
			held := mustLock(t, l, context.Background())
			token, ok := l.Token(held)
			if !ok {
				t.Fatal("no token")
			}
			if err := l.Unlock(held); err != nil {
				t.Fatal(err)
			}
			return token
		}
		javaToken := func() int64 {
			t.Helper()
			res, err := rdb.Do(context.Background(), rdb.B().Eval().Script(javaFencedAcquire).Numkeys(2).
				Key("java-fenced", counter).Arg("30000", j.field(1)).Build()).AsIntSlice()
			if err != nil || len(res) != 2 || res[0] != -1 {
				t.Fatalf("Redisson's fenced acquisition: %v, %v", res, err)
			}
			if got, err := rdb.Do(context.Background(), rdb.B().Get().Key(counter).Build()).AsInt64(); err != nil || got != res[1] {
				t.Fatalf("Redisson's getToken: %d, %v, want %d", got, err, res[1])
			}
			j.unlock(1)
			return res[1]
		}

		before := serverMicros()
		first := goToken()
		if after := serverMicros(); first < before || first > after {
			t.Fatalf("first token %d, want the server's clock in microseconds, between %d and %d", first, before, after)
		}
		if tok := javaToken(); tok != first+1 {
			t.Fatalf("Redisson's token %d after Go's %d, want %d", tok, first, first+1)
		}
		if tok := goToken(); tok != first+2 {
			t.Fatalf("Go's token %d after Redisson's %d, want %d", tok, first+1, first+2)
		}
		testkit.Do(t, rdb, "DEL", counter) // the counter lost, as with a restart without persistence
		if tok := goToken(); tok <= first+2 {
			t.Fatalf("token %d after the counter was lost, not above %d handed out before", tok, first+2)
		}
		testkit.Do(t, rdb, "DEL", counter)
		if tok := javaToken(); tok != 1 {
			t.Fatalf("Redisson's token %d on a missing counter, want Redisson's 1", tok)
		}
		if tok := goToken(); tok != 2 {
			t.Fatalf("Go's token %d after Redisson's 1, want 2", tok)
		}
	})
}
