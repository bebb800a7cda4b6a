package rwlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

// Each side's hold with a lease of its own (LockFor) is what Redisson's tryLock sees: held, with
// that TTL; Extend lengthens it as Redisson's expire does, never cuts back what a Java expire gave
// more, and lengthens a read hold's own lease, which a Java read unlock makes the lock's TTL. Java
// holds taken with lock(leaseTime) and tryLock(waitTime, leaseTime) get the lock from a Go Unlock,
// hold it for their lease, keep out, and hand over to, a Go TryLockFor, which then holds with its own
// lease. Nothing of the lock is left after the last release.
func TestJavaLeaseOfTheCall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		t.Run("write", func(t *testing.T) { javaLeaseOfWrite(t, tg) })
		t.Run("read", func(t *testing.T) { javaLeaseOfRead(t, tg) })
	})
}

// leaseRig is a Go RWLock and a Java process on one name.
type leaseRig struct {
	t    *testing.T
	tg   *testkit.Target
	rdb  rueidis.Client
	c    *redisync.Client
	rw   *rwlock.RWLock
	java *javaRW
}

func newLeaseRig(t *testing.T, tg *testkit.Target, name string) *leaseRig {
	c := tg.Client(t, redisync.WithRecheckInterval(time.Minute)) // only messages move the waiters
	return &leaseRig{t: t, tg: tg, rdb: tg.Redis(t), c: c, rw: mustNew(t, c, name), java: newJavaRW(t, tg, name)}
}

// pttl is the PTTL of key (the lock's by default).
func (r *leaseRig) pttl(key ...string) time.Duration {
	r.t.Helper()
	k := r.java.name
	if len(key) > 0 {
		k = key[0]
	}
	ms, err := strconv.ParseInt(testkit.DoString(r.t, r.rdb, "PTTL", k), 10, 64)
	require.NoError(r.t, err)
	return time.Duration(ms) * time.Millisecond
}

// javaWaits is a Java lock(leaseTime) of one side: a try that fails, a subscription to the lock's
// channel, another try that fails; release lets the other holder go, and a try on each message after
// must acquire.
func (r *leaseRig) javaWaits(what string, try func() (bool, int64), release func()) {
	r.t.Helper()
	ok, _ := try()
	require.False(r.t, ok, "%s while Go holds", what)
	sub := r.java.j.Subscribe(r.java.channel())
	ok, _ = try()
	require.False(r.t, ok, "%s while Go holds", what)
	release()
	sub.Until(10*time.Second, what, func() bool { ok, _ := try(); return ok })
}

// goWaits is a Go TryLockFor(30 s, 1 h) of l that waits, parked, until release lets it in; it
// returns the hold after checking its lease.
func (r *leaseRig) goWaits(l *rwlock.Lock, what string, release func()) context.Context {
	r.t.Helper()
	_, err := l.TryLockFor(context.Background(), 0, time.Hour)
	require.ErrorIs(r.t, err, redisync.ErrNotAcquired, "a Go TryLockFor(0, 1 h) of the %s", what)
	start := time.Now()
	type result struct {
		held context.Context
		err  error
	}
	got := make(chan result, 1)
	go func() {
		held, err := l.TryLockFor(context.Background(), 30*time.Second, time.Hour)
		got <- result{held, err}
	}()
	testkit.Eventually(r.t, 10*time.Second, func() error {
		if waiting(r.c, r.java.name) != 1 {
			return errors.New("the Go waiter is not parked")
		}
		return nil
	})
	subscribed(r.t, r.c, r.java.name)
	release()
	res := <-got
	require.NoError(r.t, res.err, "a Go TryLockFor of the %s", what)
	require.Greater(r.t, r.pttl(), 59*time.Minute, "the TTL of a Go TryLockFor(…, 1 h) of the %s", what)
	dl, ok := res.held.Deadline()
	require.True(r.t, ok && dl.After(start.Add(59*time.Minute)), "the deadline of a Go TryLockFor(…, 1 h) of the %s", what)
	return res.held
}

// gone checks that nothing of the lock is left: its hash, read leases and waiting writers.
func (r *leaseRig) gone() {
	r.t.Helper()
	n := r.java.name
	for _, k := range r.tg.Keys(r.t) {
		if k == n || k == "redisync_rwlock_writers:{"+n+"}" || strings.HasPrefix(k, "{"+n+"}:") && strings.Contains(k, ":rwlock_timeout:") {
			r.t.Fatalf("%q left after the last release", k)
		}
	}
}

func javaLeaseOfWrite(t *testing.T, tg *testkit.Target) {
	ctx := context.Background()
	r := newLeaseRig(t, tg, "java-lease-write")
	java, w := r.java, r.rw.WriteLock()

	held, err := w.LockFor(ctx, 10*time.Second)
	require.NoError(t, err)
	for what, try := range map[string]func(int64) (bool, int64){"tryLock": java.tryWrite, "read tryLock": java.tryRead} {
		ok, ttl := try(1)
		require.False(t, ok, "a Java %s of a lock Go writes for 10 s", what)
		require.True(t, ttl > 0 && ttl <= 10_000, "the PTTL a Java %s reads of a Go write hold for 10 s: %d", what, ttl)
	}

	require.NoError(t, w.Extend(held, time.Hour))
	ok, ttl := java.tryRead(1)
	require.False(t, ok, "a Java read tryLock after Extend")
	require.Greater(t, ttl, int64(59*time.Minute/time.Millisecond), "the PTTL a Java tryLock reads after Extend by an hour")

	java.expire(2 * time.Hour)
	require.NoError(t, w.Extend(held, time.Hour), "Extend after a Java expire(2h)")
	require.Greater(t, r.pttl(), 119*time.Minute, "Extend cut back what a Java expire gave")

	// Java's writeLock().lock(5 s) waits: Go's release wakes it, and it holds for its own lease.
	java.lease = 5 * time.Second
	r.javaWaits("a Java write lock(5 s)", func() (bool, int64) { return java.tryWrite(1) }, func() { require.NoError(t, w.Unlock(held)) })
	left := r.pttl()
	require.True(t, left > 0 && left <= 5*time.Second, "the TTL of a Java write lock(5 s): %v", left)

	_, err = r.rw.ReadLock().TryLockFor(ctx, 0, time.Hour)
	require.ErrorIs(t, err, redisync.ErrNotAcquired, "a Go read TryLockFor(0, 1 h) while Java writes")
	held = r.goWaits(w, "write lock after a Java write", func() { java.unlockWrite(1) })
	require.NoError(t, w.Unlock(held))
	r.gone()
}

func javaLeaseOfRead(t *testing.T, tg *testkit.Target) {
	ctx := context.Background()
	r := newLeaseRig(t, tg, "java-lease-read")
	java, rl, wl := r.java, r.rw.ReadLock(), r.rw.WriteLock()

	held, err := rl.LockFor(ctx, 10*time.Second)
	require.NoError(t, err)
	lease := leaseKey(java.name, owner(t, r.c, held), 1)
	ok, ttl := java.tryWrite(1)
	require.False(t, ok, "a Java write tryLock of a lock Go reads for 10 s")
	require.True(t, ttl > 0 && ttl <= 10_000, "the PTTL a Java write tryLock reads of a Go read hold for 10 s: %d", ttl)
	left := r.pttl(lease)
	require.True(t, left > 0 && left <= 10*time.Second, "the lease of a Go read hold for 10 s: %v", left)

	// Extend lengthens the read hold's own lease: a Java reader's unlock, which makes the lock's TTL
	// the longest read lease left, keeps the hour.
	require.NoError(t, rl.Extend(held, time.Hour))
	ok, ttl = java.tryWrite(1)
	require.False(t, ok, "a Java write tryLock after Extend")
	require.Greater(t, ttl, int64(59*time.Minute/time.Millisecond), "the PTTL a Java tryLock reads after Extend by an hour")
	java.lease = 5 * time.Second
	ok, _ = java.tryRead(2)
	require.True(t, ok, "a Java read tryLock beside a Go reader")
	java.unlockRead(2)
	require.Greater(t, r.pttl(), 59*time.Minute, "the TTL after a Java read unlock beside a Go read hold extended by an hour")

	java.expire(2 * time.Hour)
	require.NoError(t, rl.Extend(held, time.Hour), "Extend after a Java expire(2h)")
	require.Greater(t, r.pttl(), 119*time.Minute, "Extend cut back what a Java expire gave")

	// Java's writeLock().lock(5 s) waits: Go's read release wakes it.
	r.javaWaits("a Java write lock(5 s)", func() (bool, int64) { return java.tryWrite(1) }, func() { require.NoError(t, rl.Unlock(held)) })
	left = r.pttl()
	require.True(t, left > 0 && left <= 5*time.Second, "the TTL of a Java write lock(5 s): %v", left)

	held = r.goWaits(rl, "read lock after a Java write", func() { java.unlockWrite(1) })
	require.Greater(t, r.pttl(leaseKey(java.name, owner(t, r.c, held), 1)), 59*time.Minute, "the lease of a Go read TryLockFor(…, 1 h)")

	// Java's readLock().tryLock(0, 5 s) shares; once Go's reader is gone the lock lives as long as
	// the Java lease, and a Go writer waits for the Java read release.
	ok, _ = java.tryRead(2)
	require.True(t, ok, "a Java read tryLock beside a Go reader")
	require.NoError(t, rl.Unlock(held))
	left = r.pttl()
	require.True(t, left > 0 && left <= 5*time.Second, "the TTL of a Java read lock(5 s) alone: %v", left)
	held = r.goWaits(wl, "write lock after a Java read", func() { java.unlockRead(2) })
	require.NoError(t, wl.Unlock(held))
	r.gone()
}
