package rlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/testkit"
)

// javaExpire is RExpirable.expire(duration) on the lock's key, as Redisson sends it: a PEXPIRE of the
// key, whoever holds it.
const javaExpire = `return redis.call('pexpire', KEYS[1], ARGV[1])`

// A Go hold with a lease of its own (LockFor) is what Redisson's tryLock sees: held, with that TTL;
// Extend lengthens it as Redisson's expire does, and never cuts back what a Java expire gave more.
// A Java lock(leaseTime) and tryLock(waitTime, leaseTime) keep out, and hand over to, a Go
// TryLockFor, which then holds with its own lease.
func TestJavaLeaseOfTheCall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		n := "java-lease"
		rdb := tg.Redis(t)
		pttl := func() time.Duration {
			ms, err := strconv.ParseInt(testkit.DoString(t, rdb, "PTTL", n), 10, 64)
			require.NoError(t, err)
			return time.Duration(ms) * time.Millisecond
		}
		java := newJavaLock(t, tg, n)
		l := newLock(t, tg.Client(t), n)

		held, err := l.LockFor(ctx, 10*time.Second)
		require.NoError(t, err)
		ok, ttl := java.try(1)
		require.False(t, ok, "a Java tryLock of a lock Go holds for 10 s")
		require.True(t, ttl > 0 && ttl <= 10_000, "the PTTL a Java tryLock reads of a Go hold for 10 s: %d", ttl)

		require.NoError(t, l.Extend(held, time.Hour))
		ok, ttl = java.try(1)
		require.False(t, ok, "a Java tryLock after Extend")
		require.Greater(t, ttl, int64(59*time.Minute/time.Millisecond), "the PTTL a Java tryLock reads after Extend by an hour")

		java.rdb.Do(ctx, java.rdb.B().Eval().Script(javaExpire).Numkeys(1).Key(n).Arg("7200000").Build())
		require.NoError(t, l.Extend(held, time.Hour), "Extend after a Java expire(2h)")
		require.Greater(t, pttl(), 119*time.Minute, "Extend cut back what a Java expire gave")

		// Java waits with lock(5 s): Go's release wakes it, and it holds for its own lease.
		java.lease = "5000"
		acquired := make(chan bool, 1)
		subscribed := make(chan struct{})
		go func() { acquired <- java.lock(ctx, 1, func() { close(subscribed) }) }()
		select {
		case <-subscribed:
		case <-time.After(20 * time.Second):
			t.Fatal("the Java waiter did not subscribe")
		}
		require.NoError(t, l.Unlock(held))
		require.True(t, <-acquired, "the Java waiter after the Go release")
		require.LessOrEqual(t, pttl(), 5*time.Second, "the TTL of a Java lock(5 s)")

		// Go waits with TryLockFor(30 s wait, 1 h lease): the Java release wakes it.
		start := time.Now()
		got := make(chan error, 1)
		go func() {
			var err error
			held, err = l.TryLockFor(ctx, 30*time.Second, time.Hour)
			got <- err
		}()
		waiters(t, tg, n, 1)
		java.unlock(1)
		require.NoError(t, <-got, "a Go TryLockFor after the Java release")
		require.Greater(t, pttl(), 59*time.Minute, "the TTL of a Go TryLockFor(…, 1 h)")
		dl, ok2 := held.Deadline()
		require.True(t, ok2 && dl.After(start.Add(59*time.Minute)), "the deadline of a Go TryLockFor(…, 1 h)")
		require.NoError(t, l.Unlock(held))
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", n), "the lock after the last release")
	})
}
