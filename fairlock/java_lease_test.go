package fairlock_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// javaExpire is RExpirable.expire(duration) of an RFairLock as Redisson sends it: a PEXPIRE of the
// lock, its queue and its timeout set, whoever holds it.
const javaExpire = `
local result = 0
for j = 1, #KEYS, 1 do
  local expireSet
  if ARGV[2] ~= '' then
    expireSet = redis.call('pexpire', KEYS[j], ARGV[1], ARGV[2])
  else
    expireSet = redis.call('pexpire', KEYS[j], ARGV[1])
  end
  if expireSet == 1 then
    result = expireSet
  end
end
return result`

// A Go hold with a lease of its own (LockFor) is what Redisson's tryLock sees: held, with that TTL;
// Extend lengthens it as Redisson's expire does, and never cuts back what a Java expire gave more.
// A Java lock(leaseTime) and tryLock(waitTime, leaseTime) waiting in line get the lock from a Go
// Unlock and hold it for their lease; they keep out, and hand over to, a Go TryLockFor, which then
// holds with its own lease. Nothing of the lock is left after the last release.
func TestJavaLeaseOfTheCall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		n := name(t)
		rdb := tg.Redis(t)
		pttl := func() time.Duration {
			ms, err := strconv.ParseInt(testkit.DoString(t, rdb, "PTTL", n), 10, 64)
			require.NoError(t, err)
			return time.Duration(ms) * time.Millisecond
		}
		java := newJavaFair(t, tg, n)
		l := newLock(t, tg.Client(t), n)

		held, err := l.LockFor(ctx, 10*time.Second)
		require.NoError(t, err)
		// Java's tryLock(1 ms, 30 s): one try, which lines it up and reads the TTL, then it gives up.
		ok, ttl := java.try(1, time.Millisecond)
		require.False(t, ok, "a Java tryLock of a lock Go holds for 10 s")
		require.True(t, ttl > 0 && ttl <= 10_000, "the PTTL a Java tryLock reads of a Go hold for 10 s: %d", ttl)
		java.giveUp(1, time.Millisecond)

		require.NoError(t, l.Extend(held, time.Hour))
		ok, ttl = java.try(1, time.Millisecond)
		require.False(t, ok, "a Java tryLock after Extend")
		require.Greater(t, ttl, int64(59*time.Minute/time.Millisecond), "the PTTL a Java tryLock reads after Extend by an hour")
		java.giveUp(1, time.Millisecond)
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", java.queue(), java.timeouts()), "the line after the Java tries gave up")

		java.rdb.Do(ctx, java.rdb.B().Eval().Script(javaExpire).Numkeys(3).Key(n, java.queue(), java.timeouts()).
			Arg("7200000", "").Build())
		require.NoError(t, l.Extend(held, time.Hour), "Extend after a Java expire(2h)")
		require.Greater(t, pttl(), 119*time.Minute, "Extend cut back what a Java expire gave")

		// Java's lock(5 s), then tryLock(20 s, 5 s): each waits in line, Go's release wakes it, and
		// it holds for its own lease; a Go TryLockFor waits behind it and gets the lock at its release.
		for i, wait := range []time.Duration{0, 20 * time.Second} {
			what := fmt.Sprintf("Java lock(5 s) #%d (wait %v)", i, wait)
			java.lease = 5 * time.Second
			acquired := make(chan bool, 1)
			go func() { acquired <- java.lock(ctx, 1, wait) }()
			testkit.Eventually(t, 20*time.Second, func() error {
				if k := tg.Subscribers(t, java.channel()+":"+java.field(1)); k != 1 {
					return fmt.Errorf("%d subscribers on the Java waiter's channel", k)
				}
				return nil
			})
			require.NoError(t, l.Unlock(held))
			require.True(t, <-acquired, "%s after the Go release", what)
			left := pttl()
			require.True(t, left > 0 && left <= 5*time.Second, "the TTL of %s: %v", what, left)

			_, err := l.TryLockFor(ctx, 0, time.Hour)
			require.ErrorIs(t, err, redisync.ErrNotAcquired, "a Go TryLockFor(0, 1 h) while %s holds", what)
			start := time.Now()
			got := make(chan error, 1)
			go func() {
				var err error
				held, err = l.TryLockFor(ctx, 30*time.Second, time.Hour)
				got <- err
			}()
			waitQueued(t, l, 1)
			java.unlock(1)
			require.NoError(t, <-got, "a Go TryLockFor after the release of %s", what)
			require.Greater(t, pttl(), 59*time.Minute, "the TTL of a Go TryLockFor(…, 1 h)")
			dl, ok := held.Deadline()
			require.True(t, ok && dl.After(start.Add(59*time.Minute)), "the deadline of a Go TryLockFor(…, 1 h)")
		}
		require.NoError(t, l.Unlock(held))
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", n, java.queue(), java.timeouts()), "the lock after the last release")
	})
}
