package fairlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// waitRecorded waits until n waiters of lock name have left their records (their tries after
// subscribing ran).
func waitRecorded(t *testing.T, tg *testkit.Target, name string, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if got := testkit.DoString(t, tg.Redis(t), "HLEN", recordsKey(name)); got != strconv.Itoa(n) {
			return errorf("%s waiter records, want %d", got, n)
		}
		return nil
	})
}

// deadlineOfOwner returns owner's deadline in name's line, and whether it has one.
func deadlineOfOwner(t *testing.T, tg *testkit.Target, name, owner string) (time.Time, bool) {
	t.Helper()
	score := testkit.DoString(t, tg.Redis(t), "ZSCORE", "redisson_lock_timeout:{"+name+"}", owner)
	if score == "" {
		return time.Time{}, false
	}
	ms, err := strconv.ParseFloat(score, 64)
	if err != nil {
		t.Fatalf("deadline of %q: %q", owner, score)
	}
	return time.UnixMilli(int64(ms)), true
}

// An acquisition in a line of our waiters lowers no deadline but the last waiter's, however long the
// line: each of them pushes its own on at every try, so what Redisson spends on lowering every
// deadline in the line (one call per waiter) an acquisition does not.
func TestOurLineLowersOnlyTheLastDeadline(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const waiters = 12
		opts := []redisync.Option{redisync.WithRecheckInterval(time.Minute)}
		slot := fairlock.WithSlot(time.Minute)
		n := name(t)
		holder := newLock(t, tg.Client(t, opts...), n, slot)
		held := mustLock(t, holder, context.Background())
		ln := newLine(t)
		var want []string
		for i := range waiters {
			who := strconv.Itoa(i)
			want = append(want, who)
			ln.join(newLock(t, tg.Client(t, opts...), n, slot), context.Background(), who, 0)
			waitQueued(t, holder, i+1)
		}
		waitRecorded(t, tg, n, waiters)
		lowered, all := tg.Calls(t, "zincrby"), serverCalls(t, tg)
		mustUnlock(t, holder, held)
		ln.check(want...)
		lowered = tg.Calls(t, "zincrby") - lowered
		t.Logf("%.1f server calls per acquisition with a line of %d", float64(serverCalls(t, tg)-all)/waiters, waiters)
		// Redisson's lowering: 11 + 10 + ... + 1 = 66 calls.
		if lowered > waiters-1 {
			t.Fatalf("%d deadlines lowered over %d acquisitions, want at most the last waiter's each time", lowered, waiters)
		}
	})
}

// A Java waiter joining behind our waiters builds its deadline on the last one's as it would behind
// Java waiters (Redisson's layout): the last waiter's deadline is lowered by every acquisition, as
// Redisson lowers it, so the Java waiter's deadline, and the wait its try reports, are Redisson's.
func TestJavaJoinsBehindOurWaitersAsBehindJavas(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const slot = time.Minute
		n := name(t)
		c := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		holder := newLock(t, c, n, fairlock.WithSlot(slot))
		held := mustLock(t, holder, context.Background())
		next := newLock(t, c, n, fairlock.WithSlot(slot))
		first := lockIn(next, redisync.WithOwner(context.Background()))
		waitQueued(t, holder, 1)
		second := newLock(t, c, n, fairlock.WithSlot(slot))
		sctx := redisync.WithOwner(context.Background())
		last := lockIn(second, sctx)
		waitQueued(t, holder, 2)
		waitRecorded(t, tg, n, 2)
		before, _ := deadlineOfOwner(t, tg, n, ownerOf(c, sctx))

		mustUnlock(t, holder, held)
		a := <-first
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		java := newJavaFair(t, tg, n)
		if ok, ttl := java.try(1, 0); ok {
			t.Fatal("the Java waiter acquired a held lock")
		} else {
			t.Logf("the Java waiter's try reports %v to wait", time.Duration(ttl)*time.Millisecond)
		}
		got, _ := deadlineOfOwner(t, tg, n, java.field(1))
		if want := before.Add(-slot + java.wait); !got.Equal(want) {
			t.Fatalf("the Java waiter's deadline is %v after the last one's before the acquisition, want %v (one slot lower, then its own)",
				got.Sub(before), want.Sub(before))
		}
		java.giveUp(1, 0)
		mustUnlock(t, next, a.Ctx)
		b := <-last
		if b.Err != nil {
			t.Fatal(b.Err)
		}
		mustUnlock(t, second, b.Ctx)
	})
}

// A Java waiter whose process died behind our waiters has its deadline lowered by every acquisition
// ahead of it, as Redisson lowers it, and so stops blocking the line when it would behind Java
// waiters: its deadline at the head is the one it joined with, less a slot per acquisition.
func TestDeadJavaWaiterLoweredByOurAcquisitions(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const slot = time.Second // also the Java waiter's: a tryLock(1, SECONDS)
		n := name(t)
		// The holder's lease is part of every deadline behind it (Redisson's estimate): keep it short.
		holder := newLock(t, tg.Client(t), n, fairlock.WithSlot(slot), fairlock.WithLease(5*time.Second))
		held := mustLock(t, holder, context.Background())
		var ahead []<-chan testkit.Acquired
		var locks []*fairlock.Lock
		for i := range 2 {
			l := newLock(t, tg.Client(t), n, fairlock.WithSlot(slot))
			locks = append(locks, l)
			ahead = append(ahead, lockIn(l, context.Background()))
			waitQueued(t, holder, i+1)
		}
		java := newJavaFair(t, tg, n)
		if ok, _ := java.try(1, slot); ok { // its only try: then the process dies
			t.Fatal("the Java waiter acquired a held lock")
		}
		joined, _ := deadlineOfOwner(t, tg, n, java.field(1))
		ln := newLine(t)
		behind := ln.join(newLock(t, tg.Client(t), n, fairlock.WithSlot(slot)), context.Background(), "C", 0)
		waitQueued(t, holder, 4)

		mustUnlock(t, holder, held)
		var head time.Time
		for i, end := range ahead {
			a := <-end
			if a.Err != nil {
				t.Fatal(a.Err)
			}
			want := joined.Add(-time.Duration(i+1) * slot)
			if got, ok := deadlineOfOwner(t, tg, n, java.field(1)); ok && !got.Equal(want) {
				t.Fatalf("after %d acquisitions the Java waiter's deadline is %v from the one it joined with, want %v",
					i+1, got.Sub(joined), want.Sub(joined))
			} else if !ok {
				t.Logf("the Java waiter was passed over before the %d acquisitions ended", len(ahead))
			}
			head = want
			mustUnlock(t, locks[i], a.Ctx)
		}
		select {
		case err := <-behind:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(slot + 20*time.Second):
			t.Fatal("C still waits long after the dead waiter's deadline")
		}
		if early := head.Sub(ln.when("C")); early > 0 {
			t.Fatalf("C acquired %v before the dead waiter's deadline", early)
		}
		t.Logf("C acquired %v after the dead waiter's deadline at the head, %v before the one it joined with",
			ln.when("C").Sub(head), joined.Sub(ln.when("C")))
		ln.check("C")
		if n := waiting(t, holder); n != 0 {
			t.Fatalf("%d left in the queue", n)
		}
	})
}

// A waiter of ours that stops trying while its Client still listens (its process frozen) loses its
// place a slot after its last try once it is at the head, though its deadline, which no acquisition
// lowers, is far ahead: its record's last try is its deadline there.
func TestFrozenWaiterPassedOverASlotAfterItsLastTry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const slot = time.Second
		n := name(t)
		rdb := tg.Redis(t)
		holder := newLock(t, tg.Client(t), n, fairlock.WithSlot(slot))
		held := mustLock(t, holder, context.Background())
		// The frozen waiter: it joined ten places back (its deadline ten slots on), tries for the last
		// time now, and its Client still listens on its channel.
		java := newJavaFair(t, tg, n) // for its queue's names and its subscription
		frozen := "2a5e7c0d-frozen-4b1f:1"
		now := serverTime(t, rdb, n)
		testkit.Do(t, rdb, "RPUSH", java.queue(), frozen)
		testkit.Do(t, rdb, "ZADD", java.timeouts(), strconv.FormatInt(now.Add(10*slot).UnixMilli(), 10), frozen)
		testkit.Do(t, rdb, "HSET", recordsKey(n), frozen,
			strconv.FormatInt(now.UnixMicro(), 10)+" "+frozen+":1:60000:0 60000 0")
		_, stop := java.subscribe(java.channel() + ":" + frozen)
		defer stop()
		ln := newLine(t)
		behind := ln.join(newLock(t, tg.Client(t), n, fairlock.WithSlot(slot)), context.Background(), "C", 0)
		waitQueued(t, holder, 2)
		testkit.Eventually(t, 10*time.Second, func() error {
			if age := serverTime(t, rdb, n).Sub(now); age <= slot {
				return errorf("the frozen waiter's last try is only %v old", age)
			}
			return nil
		})

		mustUnlock(t, holder, held)
		select {
		case err := <-behind:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the line still waits for the frozen waiter")
		}
		ln.check("C")
		if n := waiting(t, holder); n != 0 {
			t.Fatalf("%d left in the queue", n)
		}
		if rec := testkit.DoString(t, rdb, "HGET", recordsKey(n), frozen); rec != "" {
			t.Fatalf("the frozen waiter's record %q is left", rec)
		}
	})
}
