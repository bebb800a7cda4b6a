package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// slow: no re-check and no slot-driven retry within a test, so that only a message moves a waiter.
var slow = redisync.WithRecheckInterval(time.Minute)

const slowSlot = time.Minute

func recordsKey(name string) string { return "redisync_fair_waiters:{" + name + "}" }

// record waits until owner has a waiter record that is not a grant's mark, and returns its score (the
// server's time of the try that wrote it, in us) and its tag.
func record(t *testing.T, tg *testkit.Target, name, owner string) (score, tag string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() error {
		f := strings.Fields(testkit.DoString(t, tg.Redis(t), "HGET", recordsKey(name), owner))
		if len(f) != 4 || strings.HasPrefix(f[0], "-") {
			return fmt.Errorf("record %q", f)
		}
		score, tag = f[0], f[1]
		return nil
	})
	return score, tag
}

// ownerOf returns the hash field of ctx's owner on c.
func ownerOf(c *redisync.Client, ctx context.Context) string {
	id, _ := redisync.OwnerID(ctx)
	return c.ID() + ":" + strconv.FormatInt(id, 10)
}

func lockIn(l *fairlock.Lock, ctx context.Context) <-chan testkit.Acquired {
	return testkit.Background(func() (context.Context, error) { return l.Lock(ctx) })
}

// heldElsewhere makes the lock n held for a minute by an owner of no Client here (a Java thread).
func heldElsewhere(t *testing.T, tg *testkit.Target, n string) {
	t.Helper()
	testkit.Do(t, tg.Redis(t), "HSET", n, "java-holder:1", "1")
	testkit.Do(t, tg.Redis(t), "PEXPIRE", n, "60000")
}

// grant does what a release that hands the lock to owner writes, without its message.
func grant(t *testing.T, tg *testkit.Target, name, owner, tag string) {
	t.Helper()
	testkit.Do(t, tg.Redis(t), "EVAL", `redis.call('del', KEYS[1])
redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], 30000)
redis.call('hset', KEYS[4], ARGV[1], '-0 ' .. ARGV[2])`, "4", name, "redisson_lock_queue:{"+name+"}",
		"redisson_lock_timeout:{"+name+"}", recordsKey(name), owner, tag)
}

// A release hands the lock to the head waiter with the waiter's own lease, fencing token and re-entry
// rule; the waiter returns without a try of its own, and nothing of the wait is left in Redis.
func TestReleaseHandsOver(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		n := name(t)
		testkit.Do(t, rdb, "DEL", "redisson_lock_token:{"+n+"}")
		warm := newLock(t, tg.Client(t), "{"+n+"}warm-up") // scripts loaded on n's node: one EVALSHA each
		mustUnlock(t, warm, mustLock(t, warm, context.Background()))
		holder := newLock(t, tg.Client(t), n, fairlock.WithFencing())
		held := mustLock(t, holder, context.Background())
		first, _ := holder.Token(held)

		c := tg.Client(t, slow)
		waiter := newLock(t, c, n, fairlock.WithFencing(), fairlock.WithLease(20*time.Second),
			fairlock.NonReentrant(), fairlock.WithSlot(slowSlot))
		ctx := redisync.WithOwner(context.Background())
		got := lockIn(waiter, ctx)
		record(t, tg, n, ownerOf(c, ctx))
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
		if ttl, _ := strconv.Atoi(testkit.DoString(t, rdb, "PTTL", n)); ttl <= 10_000 || ttl > 20_000 {
			t.Fatalf("PTTL %d ms after the hand-over, want the waiter's 20 s lease", ttl)
		}
		if _, ok := h.Deadline(); !ok {
			t.Fatal("a hand-over under a fixed lease gave a ctx without the lease's deadline")
		}
		if q := waiting(t, holder); q != 0 {
			t.Fatalf("queue length %d after the hand-over, want 0", q)
		}
		mustUnlock(t, waiter, h)
		for _, key := range []string{n, recordsKey(n), "redisson_lock_timeout:{" + n + "}"} {
			if got := testkit.DoString(t, rdb, "EXISTS", key); got != "0" {
				t.Fatalf("%s still exists after the only Unlock", key)
			}
		}
	})
}

// A waiter that misses the hand-over message takes the grant with its next try, once, and the hold
// count stays 1.
func TestHandOverTakenByTry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		n := name(t)
		heldElsewhere(t, tg, n)

		c := tg.Client(t, redisync.WithRecheckInterval(200*time.Millisecond))
		waiter := newLock(t, c, n, fairlock.WithSlot(slowSlot))
		ctx := redisync.WithOwner(context.Background())
		got := lockIn(waiter, ctx)
		_, tag := record(t, tg, n, ownerOf(c, ctx))
		grant(t, tg, n, ownerOf(c, ctx), tag)
		h := testkit.Await(t, got, "waiter")
		if n, err := waiter.HoldCount(h); err != nil || n != 1 {
			t.Fatalf("HoldCount %d, %v; want 1", n, err)
		}
		mustUnlock(t, waiter, h)
		if got := testkit.DoString(t, rdb, "EXISTS", n); got != "0" {
			t.Fatal("lock still exists after the only Unlock")
		}
	})
}

// A hand-over message that comes after a later try of the waiter is stale: that try found the lock
// held by someone else, so the grant no longer stands, however late the server delivered its
// message. The waiter must not take it; a hand-over after its last try it takes.
func TestStaleHandOverIgnored(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		n := name(t)
		heldElsewhere(t, tg, n)

		c := tg.Client(t, slow)
		waiter := newLock(t, c, n, fairlock.WithSlot(slowSlot))
		ctx := redisync.WithOwner(context.Background())
		owner := ownerOf(c, ctx)
		channel := "redisson_lock__channel:{" + n + "}:" + owner
		got := lockIn(waiter, ctx)
		granted, tag := record(t, tg, n, owner) // a grant made now would carry this score

		pub := "PUBLISH"
		if tg.Name == "cluster" {
			pub = "SPUBLISH"
		}
		// The waiter tries again (Redisson's wake-up), and fails.
		testkit.Do(t, rdb, pub, channel, "0")
		testkit.Eventually(t, 5*time.Second, func() error {
			if s, _ := record(t, tg, n, owner); s == granted {
				return fmt.Errorf("record score still %s: no try since", s)
			}
			return nil
		})
		// The held-back message arrives only now.
		testkit.Do(t, rdb, pub, channel, "@"+tag+" 0 "+granted)
		select {
		case r := <-got:
			t.Fatalf("waiter took a stale hand-over while another owner holds the lock (err %v)", r.Err)
		case <-time.After(300 * time.Millisecond):
		}

		// A hand-over of its current record stands.
		testkit.Do(t, rdb, "EVAL", `redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], 30000)
local score = string.match(redis.call('hget', KEYS[2], ARGV[1]), '^(%d+) ')
redis.call('hset', KEYS[2], ARGV[1], '-0 ' .. ARGV[2])
redis.call(ARGV[3], KEYS[3], '@' .. ARGV[2] .. ' 0 ' .. score)`, "3", n, recordsKey(n), channel,
			owner, tag, strings.ToLower(pub))
		h := testkit.Await(t, got, "waiter")
		mustUnlock(t, waiter, h)
		if got := testkit.DoString(t, rdb, "EXISTS", n); got != "0" {
			t.Fatal("lock still exists after the only Unlock")
		}
	})
}

// A waiter that gives up after a release handed it the lock, before it took the grant, gives it back:
// the lock goes to the next in line at once instead of staying held for the lease.
func TestGrantGivenBackByLeavingWaiter(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		n := name(t)
		heldElsewhere(t, tg, n)

		c := tg.Client(t, slow)
		first := newLock(t, c, n, fairlock.WithSlot(slowSlot))
		ctx, cancel := context.WithCancel(redisync.WithOwner(context.Background()))
		defer cancel()
		owner := ownerOf(c, ctx)
		gone := lockIn(first, ctx)
		_, tag := record(t, tg, n, owner)
		second := newLock(t, tg.Client(t, slow), n, fairlock.WithSlot(slowSlot))
		next := lockIn(second, context.Background())
		waitQueued(t, first, 2)

		// The holder's release hands the lock over (the message is held back), then the waiter gives up.
		grant(t, tg, n, owner, tag)
		cancel()
		if r := <-gone; !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("the waiter that gave up: %v, want context.Canceled", r.Err)
		}
		h := testkit.Await(t, next, "the next waiter")
		if fields := testkit.DoString(t, rdb, "HKEYS", n); strings.Contains(fields, owner) {
			t.Fatalf("the waiter that gave up still holds the lock: %s", fields)
		}
		mustUnlock(t, second, h)
		for _, key := range []string{n, recordsKey(n), "redisson_lock_queue:{" + n + "}"} {
			if got := testkit.DoString(t, rdb, "EXISTS", key); got != "0" {
				t.Fatalf("%s left behind", key)
			}
		}
	})
}

// A hand-over addressed to an acquisition that no waiter of the owner's channel has (it left, and its
// cleanup failed) is given back by the client that listens there, and the lock goes to the next in
// line instead of staying held for the lease.
func TestStrayHandOverIsGivenBack(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		n := name(t)
		holder := newLock(t, tg.Client(t), n, fairlock.WithSlot(slowSlot))
		held := mustLock(t, holder, context.Background())

		c := tg.Client(t, slow)
		ctx, cancel := context.WithCancel(redisync.WithOwner(context.Background()))
		defer cancel()
		owner := ownerOf(c, ctx)
		listening := lockIn(newLock(t, c, n, fairlock.WithSlot(slowSlot)), ctx)
		score, _ := record(t, tg, n, owner)
		second := newLock(t, tg.Client(t, slow), n, fairlock.WithSlot(slowSlot))
		next := lockIn(second, context.Background())
		waitQueued(t, holder, 2)
		// The owner's record names an acquisition that has left.
		testkit.Do(t, rdb, "HSET", recordsKey(n), owner, score+" departed 30000 0")

		mustUnlock(t, holder, held)
		h := testkit.Await(t, next, "the next waiter")
		if fields := testkit.DoString(t, rdb, "HKEYS", n); strings.Contains(fields, owner) {
			t.Fatalf("the departed acquisition still holds the lock: %s", fields)
		}
		mustUnlock(t, second, h)
		cancel()
		if r := <-listening; !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("the owner's listening waiter: %v, want context.Canceled", r.Err)
		}
	})
}

// Goroutines that share an owner take turns: while one waits in the queue (or holds), the others wait
// in the process, and each goes as soon as the one before it releases.
func TestGoroutinesSharingAnOwnerTakeTurns(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		n := name(t)
		holder := newLock(t, tg.Client(t), n, fairlock.WithSlot(slowSlot))
		held := mustLock(t, holder, context.Background())

		c := tg.Client(t, slow)
		l := newLock(t, c, n, fairlock.WithSlot(slowSlot))
		ctx := redisync.WithOwner(context.Background())
		owner := ownerOf(c, ctx)
		one := lockIn(l, ctx)
		record(t, tg, n, owner)
		two := lockIn(l, ctx)

		mustUnlock(t, holder, held)
		h1 := testkit.Await(t, one, "first goroutine")
		if n, err := l.HoldCount(h1); err != nil || n != 1 {
			t.Fatalf("HoldCount %d, %v; want 1: the second goroutine must wait for the first", n, err)
		}
		select {
		case r := <-two:
			t.Fatalf("the second goroutine entered while the first held the lock: %v", r.Err)
		default:
		}
		mustUnlock(t, l, h1)
		h2 := testkit.Await(t, two, "second goroutine")
		mustUnlock(t, l, h2)
		if got := testkit.DoString(t, rdb, "EXISTS", n); got != "0" {
			t.Fatal("lock still exists after both Unlocks")
		}
	})
}
