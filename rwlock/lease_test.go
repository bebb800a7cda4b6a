package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
	"github.com/stretchr/testify/require"
)

// waiting returns how many goroutines of c wait on the lock's channel.
func waiting(c *redisync.Client, name string) int {
	return core.Of(c).Notifier().Waiting("redisson_rwlock:{" + name + "}")
}

// subscribed waits until c's notifier has the channel of name subscribed.
func subscribed(t *testing.T, c *redisync.Client, name string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if !core.Of(c).Notifier().Subscribed("redisson_rwlock:{" + name + "}") {
			return errors.New("channel not subscribed yet")
		}
		return nil
	})
}

func TestDowngradeWakesReaders(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		// The holder's watchdog TTL (30 s) and the waiters' recheck interval (1 min) are far beyond
		// the waiters' bounds: only a notification can let them in within those bounds.
		rw := mustNew(t, tg.Client(t), "downgrade")
		wc := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		others := mustNew(t, wc, "downgrade")

		w, err := rw.WriteLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rw.ReadLock().Lock(w)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			held context.Context
			err  error
		}
		readerIn, writerIn := make(chan result, 1), make(chan result, 1)
		go func() {
			held, err := others.ReadLock().TryLock(ctx, 10*time.Second)
			readerIn <- result{held, err}
		}()
		go func() {
			held, err := others.WriteLock().TryLock(ctx, 20*time.Second)
			writerIn <- result{held, err}
		}()
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := waiting(wc, "downgrade"); n != 2 {
				return errors.New("waiters not parked yet")
			}
			return nil
		})
		subscribed(t, wc, "downgrade") // and their second try, once subscribed, fails

		if err := rw.WriteLock().Unlock(w); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(context.Cause(w), redisync.ErrReleased) {
			t.Fatalf("write ctx after its unlock: %v", context.Cause(w))
		}
		if r.Err() != nil {
			t.Fatalf("the downgraded read ctx ended with the write unlock: %v", context.Cause(r))
		}
		got := <-readerIn
		if got.err != nil {
			t.Fatalf("waiting reader after the downgrade: %v (it should be woken, not wait for the TTL)", got.err)
		}
		if locked, err := rw.ReadLock().IsLocked(ctx); !locked || err != nil {
			t.Fatalf("read IsLocked after downgrade: %v, %v", locked, err)
		}
		// Readers in, the writer still out.
		if err := others.ReadLock().Unlock(got.held); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case res := <-writerIn:
			t.Fatalf("writer got in while the downgraded owner reads: %v", res.err)
		default:
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
		got = <-writerIn
		if got.err != nil {
			t.Fatalf("waiting writer after the last read unlock: %v", got.err)
		}
		if err := others.WriteLock().Unlock(got.held); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCrashedReaderAgesOut(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		opt := redisync.WithWatchdogTimeout(time.Second)
		crashed, live := tg.Client(t, opt), tg.Client(t, opt)
		dead, err := mustNew(t, crashed, "aging").ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		liveLock := mustNew(t, live, "aging")
		alive, err := liveLock.ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		aliveAcquired := time.Now()
		deadKey := leaseKey("aging", owner(t, crashed, dead), 1)
		aliveKey := leaseKey("aging", owner(t, live, alive), 1)
		crashed.Close() // gone without unlocking

		writer := mustNew(t, tg.Client(t, opt), "aging")
		wrote := make(chan error, 1)
		go func() {
			held, err := writer.WriteLock().TryLock(ctx, 20*time.Second)
			if err == nil {
				err = writer.WriteLock().Unlock(held)
			}
			wrote <- err
		}()

		// The dead reader's lease ends, although the live reader keeps renewing its own.
		testkit.Eventually(t, 10*time.Second, func() error {
			if num(t, rdb, "EXISTS", deadKey) != 0 {
				return errors.New("the crashed reader's lease is still there")
			}
			return nil
		})
		// The live reader's lease is renewed on, past the end of its first one.
		testkit.AwaitRenewals(t, rdb, aliveKey, 2)
		for time.Since(aliveAcquired) < time.Second {
			testkit.AwaitRenewals(t, rdb, aliveKey, 1)
		}
		if num(t, rdb, "EXISTS", aliveKey) != 1 || alive.Err() != nil {
			t.Fatalf("the live reader lost its lease: ctx %v", context.Cause(alive))
		}
		select {
		case err := <-wrote:
			t.Fatalf("writer got in while a live reader reads: %v", err)
		default:
		}
		if err := liveLock.ReadLock().Unlock(alive); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("writer after the live reader left: %v", err)
		}

		// A dead reader alone: the lock itself ages out, and a writer gets in.
		crashed2 := tg.Client(t, opt)
		if _, err := mustNew(t, crashed2, "aging").ReadLock().Lock(ctx); err != nil {
			t.Fatal(err)
		}
		crashed2.Close()
		held, err := writer.WriteLock().TryLock(ctx, 20*time.Second)
		if err != nil {
			t.Fatalf("writer after a lone reader crashed: %v", err)
		}
		if err := writer.WriteLock().Unlock(held); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWatchdog(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		// A hold is lost, rightly, when no renewal reaches Redis within the timeout: the holds here
		// outlive a machine that stalls for two seconds (with one second they were lost under load,
		// their keys gone from Redis).
		const timeout = 3 * time.Second
		c := tg.Client(t, redisync.WithWatchdogTimeout(timeout))
		cc := core.Of(c)
		rw := mustNew(t, c, "watched")

		w, err := rw.WriteLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rw.ReadLock().Lock(w)
		if err != nil {
			t.Fatal(err)
		}
		acquired := time.Now()
		if _, n := cc.Pending(); n != 2 {
			t.Fatalf("%d renewals, want 2 (the write hold and the read hold)", n)
		}
		// Both holds are renewed, past the end of their first leases (which the client counts from
		// when the acquisitions were sent, before Lock returned).
		lease := leaseKey("watched", owner(t, c, r), 1)
		testkit.AwaitRenewals(t, rdb, "watched", 2)
		testkit.AwaitRenewals(t, rdb, lease, 2)
		for time.Since(acquired) < timeout {
			testkit.AwaitRenewals(t, rdb, lease, 1)
		}
		if w.Err() != nil || r.Err() != nil {
			t.Fatalf("holds lost under the watchdog: write %v, read %v", context.Cause(w), context.Cause(r))
		}
		if ms := num(t, rdb, "PTTL", lease); ms <= 0 || ms > timeout.Milliseconds() {
			t.Fatalf("read lease key PTTL %d after renewals, want in (0, %d]", ms, timeout.Milliseconds())
		}
		if err := rw.WriteLock().Unlock(w); err != nil {
			t.Fatal(err)
		}
		if _, n := cc.Pending(); n != 1 {
			t.Fatalf("%d renewals after the write unlock, want 1", n)
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
		if _, n := cc.Pending(); n != 0 {
			t.Fatalf("%d renewals after the last unlock", n)
		}
		if n := num(t, rdb, "EXISTS", "watched"); n != 0 {
			t.Fatal("lock left after the last unlock")
		}

		// A read hold whose lease key vanished (its lease ended unseen) is reported lost.
		r, err = rw.ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cmd(t, rdb, "DEL", leaseKey("watched", owner(t, c, r), 1))
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the watchdog did not notice the lost read lease")
		}
		if !errors.Is(context.Cause(r), redisync.ErrLost) {
			t.Fatalf("cause %v, want ErrLost", context.Cause(r))
		}
		if _, n := cc.Pending(); n != 0 {
			t.Fatalf("%d renewals after the hold was lost", n)
		}
		if err := rw.ReadLock().Unlock(r); err != nil && !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatal(err)
		}
		if n := num(t, rdb, "EXISTS", "watched"); n != 0 {
			t.Fatal("lock left after unlocking a lost hold")
		}
	})
}

// A fixed lease is each read hold's own lease key's, and once a write hold's lease has ended a
// reader gets in. (The conformance suite checks the rest of a fixed lease on each side.)
func TestFixedLeaseAcrossModes(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const lease = 500 * time.Millisecond
		ctx := context.Background()
		c := tg.Client(t)
		rw := mustNew(t, c, "leased", rwlock.WithLease(lease))
		other := mustNew(t, tg.Client(t), "leased")

		r, err := rw.ReadLock().Lock(ctx)
		require.NoError(t, err)
		d, _ := r.Deadline()
		// A busy machine may read the PTTL after the lease: the hold's own deadline has passed then.
		if ms := num(t, tg.Redis(t), "PTTL", leaseKey("leased", owner(t, c, r), 1)); (ms <= 0 && !time.Now().After(d)) || ms > lease.Milliseconds() {
			t.Fatalf("read lease key PTTL %d, want (0, %d]", ms, lease.Milliseconds())
		}
		<-r.Done()
		w, err := rw.WriteLock().Lock(ctx) // once the read lease has ended in Redis too
		require.NoError(t, err)
		require.ErrorIs(t, rw.ReadLock().Unlock(r), redisync.ErrNotHeld)
		got, err := other.ReadLock().TryLock(ctx, 5*time.Second)
		require.NoError(t, err, "reader after the write lease ended")
		// The deadline, not Err: a loaded machine may run the ctx's timer late.
		wd, _ := w.Deadline()
		require.True(t, time.Now().After(wd), "a reader got in %v before the writer's deadline", time.Until(wd))
		<-w.Done()
		require.ErrorIs(t, rw.WriteLock().Unlock(w), redisync.ErrNotHeld)
		require.NoError(t, other.ReadLock().Unlock(got))
	})
}
