package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// waitFor runs Lock on l in the background and returns where its outcome arrives.
func waitFor(l *rlock.Lock) <-chan testkit.Acquired {
	return testkit.Background(func() (context.Context, error) { return l.Lock(context.Background()) })
}

// waiterRecords returns the members of the lock's waiter records.
func waiterRecords(t *testing.T, tg *testkit.Target, name string) []string {
	t.Helper()
	out := testkit.DoString(t, tg.Redis(t), "ZRANGE", "redisync_lock_waiters:{"+name+"}", "0", "-1")
	var recs []string
	for _, r := range strings.Fields(strings.Trim(out, "[]")) {
		if !strings.HasPrefix(r, "~") { // a Java waiter's turn (rlock_wake.lua), not a waiter
			recs = append(recs, r)
		}
	}
	return recs
}

// waiters waits until the lock has n waiter records.
func waiters(t *testing.T, tg *testkit.Target, name string, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if rec := waiterRecords(t, tg, name); len(rec) != n {
			return fmt.Errorf("%d waiter records, want %d", len(rec), n)
		}
		return nil
	})
}

// oneWaiter waits until the lock has a single waiter record, and returns it.
func oneWaiter(t *testing.T, tg *testkit.Target, name string) string {
	t.Helper()
	var rec []string
	testkit.Eventually(t, 5*time.Second, func() error {
		if rec = waiterRecords(t, tg, name); len(rec) != 1 {
			return fmt.Errorf("%d waiter records", len(rec))
		}
		return nil
	})
	return rec[0]
}

// triedTwice waits until a waiter on a Client of its own has made its two tries since the servers
// had run base scripts: the first one, and the one once its channel is subscribed.
func triedTwice(t *testing.T, tg *testkit.Target, base int64) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := tg.Calls(t, "evalsha", "eval") - base; n < 2 {
			return fmt.Errorf("the waiter made %d tries, want 2", n)
		}
		return nil
	})
}

// A release hands the lock to the waiter with the waiter's own lease, fencing token and re-entry
// rule; the waiter returns without a try of its own.
func TestReleaseHandsOver(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		testkit.Do(t, rdb, "DEL", "redisson_lock_token:{hand}")
		warm := newLock(t, tg.Client(t), "{hand}warm-up") // scripts loaded on hand's node: one EVALSHA each
		mustUnlock(t, warm, mustLock(t, warm, context.Background()))
		holder := newLock(t, tg.Client(t), "hand", rlock.WithFencing())
		held := mustLock(t, holder, context.Background())
		first, _ := holder.Token(held)

		waiter := newLock(t, tg.Client(t, slow), "hand", rlock.WithFencing(), rlock.WithLease(20*time.Second), rlock.NonReentrant())
		base := tg.Calls(t, "evalsha", "eval")
		got := waitFor(waiter)
		oneWaiter(t, tg, "hand")
		triedTwice(t, tg, base) // its try once subscribed, which covers a release in between
		before := tg.Calls(t, "evalsha", "eval")
		mustUnlock(t, holder, held)
		h := testkit.Await(t, got, "waiter")
		if calls := tg.Calls(t, "evalsha", "eval") - before; calls != 1 {
			t.Fatalf("%d scripts between the release and the waiter's return, want the release alone", calls)
		}
		if tok, ok := waiter.Token(h); !ok || tok != first+1 {
			t.Fatalf("handed-over token %d (ok %v), want %d", tok, ok, first+1)
		}
		if n, err := waiter.HoldCount(h); err != nil || n != 1 {
			t.Fatalf("HoldCount %d, %v; want 1", n, err)
		}
		ttl := mustInt(t, testkit.DoString(t, rdb, "PTTL", "hand"))
		if ttl <= 10_000 || ttl > 20_000 {
			t.Fatalf("PTTL %d ms after the hand-over, want the waiter's 20 s lease", ttl)
		}
		if _, ok := h.Deadline(); !ok {
			t.Fatal("a hand-over under a fixed lease gave a ctx without the lease's deadline")
		}
		mustUnlock(t, waiter, h)
		if got := testkit.DoString(t, rdb, "EXISTS", "hand"); got != "0" {
			t.Fatalf("lock still exists after the only Unlock: a hand-over counted twice")
		}
	})
}

// A hand-over to a waiter that is no longer there (its client still listens) is given back at once by
// that client, and the lock goes to the next waiter instead of staying held for the lease.
func TestHandOverToDepartedWaiterIsGivenBack(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		holder := newLock(t, tg.Client(t), "departed")
		held := mustLock(t, holder, context.Background())

		c := tg.Client(t, slow)
		live := newLock(t, c, "departed")
		got := waitFor(live)
		oneWaiter(t, tg, "departed")
		// A record of the same client for an owner with no waiter, first in line: what a waiter that
		// left leaves when its cleanup has not run yet.
		ghost := c.ID() + ":999999:1:30000:0"
		testkit.Do(t, rdb, "ZADD", "redisync_lock_waiters:{departed}", "1", ghost) // scores are times in us
		testkit.Do(t, rdb, "ZADD", "redisync_lock_waiters:{departed}", "XX", fmt.Sprint(time.Now().Add(time.Minute).UnixMicro()), ghost)
		if rec := waiterRecords(t, tg, "departed"); len(rec) != 2 || rec[0] != ghost {
			t.Fatalf("records %v: want the ghost first", rec)
		}
		mustUnlock(t, holder, held)
		h := testkit.Await(t, got, "the waiter behind the departed one")
		if n, err := live.HoldCount(h); err != nil || n != 1 {
			t.Fatalf("HoldCount %d, %v; want 1", n, err)
		}
		if fields := testkit.DoString(t, rdb, "HKEYS", "departed"); strings.Contains(fields, ":999999") {
			t.Fatalf("the departed waiter still holds the lock: %s", fields)
		}
		mustUnlock(t, live, h)
		if rec := waiterRecords(t, tg, "departed"); len(rec) != 0 {
			t.Fatalf("records left: %v", rec)
		}
	})
}

// A waiter that misses the hand-over message takes the grant with its next try, once, and the hold
// count stays 1.
func TestHandOverTakenByTry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		testkit.Do(t, rdb, "HSET", "missed", "java-holder:1", "1") // held by someone else
		testkit.Do(t, rdb, "PEXPIRE", "missed", "60000")

		waiter := newLock(t, tg.Client(t, redisync.WithRecheckInterval(200*time.Millisecond)), "missed")
		got := waitFor(waiter)
		rec := oneWaiter(t, tg, "missed")
		// What a release that hands the lock over writes, without its message.
		parts := strings.SplitN(rec, ":", 3)
		testkit.Do(t, rdb, "EVAL", `redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], 30000)
redis.call('zadd', KEYS[2], 0, ARGV[2])`, "2", "missed", "redisync_lock_waiters:{missed}", parts[0]+":"+parts[1], rec)
		h := testkit.Await(t, got, "waiter")
		if n, err := waiter.HoldCount(h); err != nil || n != 1 {
			t.Fatalf("HoldCount %d, %v; want 1", n, err)
		}
		mustUnlock(t, waiter, h)
		if got := testkit.DoString(t, rdb, "EXISTS", "missed"); got != "0" {
			t.Fatal("lock still exists after the only Unlock")
		}
	})
}

// A hand-over message that comes after a later try of the waiter is stale: that try found the lock
// held by someone else, so the grant no longer stands (it expired, or was given back), however late
// the server delivered its message. The waiter must not take it.
func TestStaleHandOverIgnored(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		testkit.Do(t, rdb, "HSET", "stale", "java-holder:1", "1") // held by someone else
		testkit.Do(t, rdb, "PEXPIRE", "stale", "60000")

		c := tg.Client(t, slow)
		waiter := newLock(t, c, "stale")
		base := tg.Calls(t, "evalsha", "eval")
		got := waitFor(waiter)
		rec := oneWaiter(t, tg, "stale")
		triedTwice(t, tg, base) // its try once subscribed
		score := func() string {
			return testkit.DoString(t, rdb, "ZSCORE", "redisync_lock_waiters:{stale}", rec)
		}
		granted := score() // a grant made now would carry this score; its message is held back

		pub := "PUBLISH"
		if tg.Name == "cluster" {
			pub = "SPUBLISH"
		}
		// The waiter tries again (a release message on the shared channel), and fails.
		testkit.Do(t, rdb, pub, "redisson_lock__channel:{stale}", "0")
		testkit.Eventually(t, 5*time.Second, func() error {
			if s := score(); s == granted {
				return fmt.Errorf("record score still %s: no try since", s)
			}
			return nil
		})
		// The held-back message arrives only now.
		testkit.Do(t, rdb, pub, "redisync_lock__wake:{stale}:"+c.ID(), "@"+rec+" 0 "+granted)
		select {
		case r := <-got:
			t.Fatalf("waiter took a stale hand-over while another owner holds the lock (err %v)", r.Err)
		case <-time.After(300 * time.Millisecond):
		}

		// A hand-over of its current record stands.
		testkit.Do(t, rdb, "EVAL", `redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], 30000)
local s = redis.call('zscore', KEYS[2], ARGV[2])
redis.call('zadd', KEYS[2], 0, ARGV[2])
redis.call(ARGV[3], KEYS[3], '@' .. ARGV[2] .. ' 0 ' .. s)`, "3", "stale", "redisync_lock_waiters:{stale}", "redisync_lock__wake:{stale}:"+c.ID(),
			strings.Join(strings.SplitN(rec, ":", 3)[:2], ":"), rec, strings.ToLower(pub))
		h := testkit.Await(t, got, "waiter")
		mustUnlock(t, waiter, h)
		if got := testkit.DoString(t, rdb, "EXISTS", "stale"); got != "0" {
			t.Fatal("lock still exists after the only Unlock")
		}
	})
}
