package reliability

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// TestSemaphoreTryResentAfterItsGrant: a waiter's try records the waiter and its answer is lost; a
// release hands the waiter a permit meanwhile (the grant waits under the waiter's record), and
// another release leaves a permit free. The try, sent again, must take the permit handed to it, not
// the free one: it does not know that its first send recorded it, and taking the free one would leave
// the grant to nobody, a permit missing until the grants expire ten minutes later. Found by the
// cluster soak (TestSoakCluster), where a semaphore ended a permit short with its grants, records and
// memos all gone.
func TestSemaphoreTryResentAfterItsGrant(t *testing.T) {
	own := testkit.Own(t)
	proxy := redistest.StartProxy(t, own.Servers[0].Addr)
	through := &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: own.Servers}
	a, b, w := own.Client(t), own.Client(t), through.Client(t)
	const name = "resent-sem"
	sa, sb, sw := must1(semaphore.New(a, name)), must1(semaphore.New(b, name)), must1(semaphore.New(w, name))
	ctx := context.Background()
	if _, err := sa.TrySetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*semaphore.Semaphore{sa, sb} {
		if err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	// The waiter's try that records it: the acquiring script's third ARGV, its record, is set once the
	// waiter listens (KEYS: 5; ARGV from the 9th argument of EVALSHA sha numkeys ...).
	f := proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: name,
		Match: func(args []string) bool { return len(args) > 10 && args[2] == "5" && args[10] != "" }})
	t.Cleanup(f.Release)
	got := make(chan error, 1)
	go func() { got <- sw.TryAcquire(ctx, 1, 10*time.Second) }()
	if !f.Wait(5 * time.Second) {
		t.Fatal("the waiter's recording try did not reach Redis")
	}
	if err := sa.Release(ctx, 1); err != nil { // handed to the recorded waiter
		t.Fatal(err)
	}
	grants := core.Of(a).Names().Prefixed("redisync_semaphore_grants", name)
	rdb := own.Redis(t)
	if n := testkit.DoString(t, rdb, "HLEN", grants); n != "1" {
		t.Fatalf("%s holds %s grants after the release, want 1", grants, n)
	}
	if err := sb.Release(ctx, 1); err != nil { // free: nobody else is recorded
		t.Fatal(err)
	}
	proxy.Drop() // the try's answer is lost: it is sent again
	if err := <-got; err != nil {
		t.Fatalf("waiter's TryAcquire: %v", err)
	}
	if err := sw.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() error {
		n, h := testkit.DoString(t, rdb, "GET", name), testkit.DoString(t, rdb, "HLEN", grants)
		if n != "2" || h != "0" {
			return fmt.Errorf("%s holds %s permits and %s holds %s grants, want 2 and 0", name, n, grants, h)
		}
		return nil
	})
}

// TestLockTryResentAfterItsRecord: a waiter's try records the waiter and its answer is lost; the
// holder's lease ends meanwhile, so that the try, sent again, finds the lock free and takes it. It
// must take its record away as it does so: it does not know that its first send recorded the
// waiter, and a record left behind has the next release hand the lock to this owner again, after its
// Unlock, until its Client gives it back. Found by the cluster soak (TestSoakCluster), where a
// successful Unlock of a MultiLock's sub-lock left the owner's field in the lock.
func TestLockTryResentAfterItsRecord(t *testing.T) {
	own := testkit.Own(t)
	proxy := redistest.StartProxy(t, own.Servers[0].Addr)
	through := &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: own.Servers}
	h, w := own.Client(t), through.Client(t)
	const name = "resent-lock"
	ctx := context.Background()
	hl := must1(rlock.New(h, name, rlock.WithLease(time.Second)))
	hheld, err := hl.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // its lease has ended: the Unlock only lets the holder's Client forget it
		if err := hl.Unlock(hheld); !errors.Is(err, redisync.ErrNotHeld) {
			t.Errorf("holder's Unlock after its lease: %v, want ErrNotHeld", err)
		}
	}()
	// The waiter's try that records it (rlock_acquire.lua: 5 KEYS, 10 ARGV).
	f := proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: name,
		Match: func(args []string) bool { return len(args) == 3+5+10 && args[2] == "5" }})
	t.Cleanup(f.Release)
	lw := must1(rlock.New(w, name))
	got := testkit.Background(func() (context.Context, error) { return lw.TryLock(ctx, 10*time.Second) })
	if !f.Wait(5 * time.Second) {
		t.Fatal("the waiter's recording try did not reach Redis")
	}
	rdb := own.Redis(t)
	waiters := core.Of(h).Names().Prefixed("redisync_lock_waiters", name)
	if n := testkit.DoString(t, rdb, "ZCARD", waiters); n != "1" {
		t.Fatalf("%s holds %s records, want the waiter's", waiters, n)
	}
	testkit.Eventually(t, 5*time.Second, func() error { // the holder's lease ends
		if n := testkit.DoString(t, rdb, "EXISTS", name); n != "0" {
			return errors.New("the holder's lease has not ended yet")
		}
		return nil
	})
	proxy.Drop() // the try's answer is lost: it is sent again, and finds the lock free
	held := testkit.Await(t, got, "the waiter's TryLock")
	if n := testkit.DoString(t, rdb, "ZRANGE", waiters, "0", "-1"); n != "" {
		t.Errorf("the waiter holds the lock and its record is still in %s: %s", waiters, n)
	}
	if err := lw.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// TestLockTryResentUnlockLeavesItFree: a waiter's try records the waiter and its answer is lost; the
// holder's lease ends meanwhile, and the try, sent again, acquires the free lock. The waiter's own
// Unlock must then leave the lock free, for anyone to take: a try that acquires removes its waiter's
// record whether or not it knows that a try recorded it. A record left behind had the release find
// the waiter recorded and hand the lock back to it, the owner that had just released it, so that a
// successful Unlock left the lock held until the waiter's Client heard the grant and gave it back
// (the soak's "a successful Unlock left the hold").
func TestLockTryResentUnlockLeavesItFree(t *testing.T) {
	own := testkit.Own(t)
	proxy := redistest.StartProxy(t, own.Servers[0].Addr)
	through := &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: own.Servers}
	h, w, o := own.Client(t), through.Client(t), own.Client(t)
	const name = "resent-unlock"
	ctx := context.Background()
	hl := must1(rlock.New(h, name, rlock.WithLease(time.Second)))
	hheld, err := hl.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // its lease has ended: the Unlock only lets the holder's Client forget it
		if err := hl.Unlock(hheld); !errors.Is(err, redisync.ErrNotHeld) {
			t.Errorf("holder's Unlock after its lease: %v, want ErrNotHeld", err)
		}
	}()
	// The waiter's try once it listens, which records it (rlock_acquire.lua: 5 KEYS, 10 ARGV, the
	// last its tag).
	f := proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: name,
		Match: func(args []string) bool { return len(args) == 3+5+10 && args[2] == "5" && args[len(args)-1] != "" }})
	t.Cleanup(f.Release)
	lw := must1(rlock.New(w, name))
	got := testkit.Background(func() (context.Context, error) { return lw.TryLock(ctx, 10*time.Second) })
	if !f.Wait(5 * time.Second) {
		t.Fatal("the waiter's recording try did not reach Redis")
	}
	rdb := own.Redis(t)
	testkit.Eventually(t, 5*time.Second, func() error { // the holder's lease ends
		if n := testkit.DoString(t, rdb, "EXISTS", name); n != "0" {
			return errors.New("the holder's lease has not ended yet")
		}
		return nil
	})
	proxy.Drop() // the try's answer is lost: it is sent again, and acquires the free lock
	held := testkit.Await(t, got, "the waiter's TryLock")
	if err := lw.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if v := testkit.DoString(t, rdb, "HGETALL", name); v != "" {
		t.Fatalf("the lock is held after its only holder's Unlock: %s", v)
	}
	ol := must1(rlock.New(o, name))
	oheld, err := ol.TryLock(ctx, 0)
	if err != nil {
		t.Fatalf("another Client's TryLock after the Unlock: %v", err)
	}
	if err := ol.Unlock(oheld); err != nil {
		t.Fatal(err)
	}
}

// TestFairTryResentAfterItsGrant: a fair lock waiter's try is answered, and its answer lost; the
// holder's release hands the lock to the waiter meanwhile, marking its record. The try, sent again,
// finds the lock counted for its owner and takes it as what its first send did: it must take the
// grant's mark away as a try that finds the grant does, or the waiter's Client, on hearing the grant
// after the waiter left, gives back the lock the waiter holds, to the next in line. Found by the
// cluster soak (TestSoakCluster): two holders of the fair lock.
func TestFairTryResentAfterItsGrant(t *testing.T) {
	own := testkit.Own(t)
	proxy := redistest.StartProxy(t, own.Servers[0].Addr)
	through := &testkit.Target{Name: "standalone", Addrs: []string{proxy.Addr()}, Servers: own.Servers}
	h, w := own.Client(t), through.Client(t)
	const name = "resent-fair"
	ctx := context.Background()
	hl := must1(fairlock.New(h, name))
	hheld, err := hl.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's try once it listens (fairlock_acquire.lua: 7 KEYS, 12 ARGV, the 10th its tag).
	f := proxy.Arm(redistest.Rule{Cut: redistest.HoldReply, Key: name,
		Match: func(args []string) bool { return len(args) == 3+7+12 && args[2] == "7" && args[3+7+9] != "" }})
	t.Cleanup(f.Release)
	lw := must1(fairlock.New(w, name))
	got := testkit.Background(func() (context.Context, error) { return lw.TryLock(ctx, 10*time.Second) })
	if !f.Wait(5 * time.Second) {
		t.Fatal("the waiter's try did not reach Redis")
	}
	if err := hl.Unlock(hheld); err != nil { // hands the lock to the waiter
		t.Fatal(err)
	}
	rdb := own.Redis(t)
	records := core.Of(h).Names().Prefixed("redisync_fair_waiters", name)
	if v := testkit.DoString(t, rdb, "HVALS", records); !strings.HasPrefix(v, "-") {
		t.Fatalf("%s holds %q: the release did not hand the lock over", records, v)
	}
	proxy.Drop() // the try's answer is lost: it is sent again, and finds the lock counted for its owner
	held := testkit.Await(t, got, "the waiter's TryLock")
	if v := testkit.DoString(t, rdb, "HVALS", records); v != "" {
		t.Errorf("the waiter holds the lock and the grant's mark is still in %s: %q", records, v)
	}
	if err := lw.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", name); n != "0" {
		t.Fatalf("lock still there after its Unlock: EXISTS %s", n)
	}
}
