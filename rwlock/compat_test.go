package rwlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// What a Java process running Redisson does, written after Redisson's RReadWriteLock semantics.
const (
	// KEYS[1] lock, KEYS[2] "{N}:OWNER:rwlock_timeout"; ARGV lease, OWNER, OWNER:write.
	// Returns nil when acquired, else the lock's PTTL.
	javaReadAcquire = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false or mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  if mode == false then redis.call('hset', KEYS[1], 'mode', 'read') end
  local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])`
	// KEYS[1] lock; ARGV lease, OWNER:write. Returns nil when acquired, else the lock's PTTL.
	javaWriteAcquire = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	// The release of a lone reader: KEYS[1] lock, KEYS[2] channel, KEYS[3] its lease key;
	// ARGV OWNER, publish command.
	javaReadRelease = `
if redis.call('hincrby', KEYS[1], ARGV[1], -1) == 0 then redis.call('hdel', KEYS[1], ARGV[1]) end
redis.call('del', KEYS[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[2], KEYS[2], '0')
end
return 1`
)

func eval(t testing.TB, rdb rueidis.Client, src string, keys []string, args ...string) (int64, bool) {
	t.Helper()
	n, err := rdb.Do(context.Background(), rdb.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, true
	}
	if err != nil {
		t.Fatal(err)
	}
	return n, false
}

func TestRedissonCompatibility(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		pub, sub := "PUBLISH", rdb.B().Subscribe().Channel("redisson_rwlock:{compat}").Build()
		if tg.Name == "cluster" {
			pub, sub = "SPUBLISH", rdb.B().Ssubscribe().Channel("redisson_rwlock:{compat}").Build()
		}
		const java = "6f1c9a52-0d1e-4d5e-9a57-3c1f2a7b8e90:41"
		javaLease := "{compat}:" + java + ":rwlock_timeout"
		c := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		rw := mustNew(t, c, "compat")

		// A Java reader holds: our readers share, our writer waits and its unlock message wakes it.
		if _, ok := eval(t, rdb, javaReadAcquire, []string{"compat", javaLease}, "30000", java, java+":write"); !ok {
			t.Fatal("java reader could not acquire a free lock")
		}
		r, err := rw.ReadLock().TryLock(ctx, 0)
		if err != nil {
			t.Fatalf("our reader beside a Java reader: %v", err)
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
		if mode := str(t, rdb, "HGET", "compat", "mode"); mode != "read" {
			t.Fatalf("our read unlock freed the lock a Java reader holds (mode %q)", mode)
		}
		if _, err := rw.WriteLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("our writer while a Java reader reads: %v, want ErrNotAcquired", err)
		}
		wrote := make(chan error, 1)
		var w context.Context
		go func() {
			var err error
			w, err = rw.WriteLock().TryLock(ctx, 10*time.Second)
			wrote <- err
		}()
		testkit.Eventually(t, 5*time.Second, func() error {
			if waiting(c, "compat") != 1 {
				return errors.New("writer not parked")
			}
			return nil
		})
		subscribed(t, c, "compat")
		eval(t, rdb, javaReadRelease, []string{"compat", "redisson_rwlock:{compat}", javaLease + ":1"}, java, pub)
		if err := <-wrote; err != nil {
			t.Fatalf("our writer after the Java reader's unlock message: %v", err)
		}

		// Our writer holds, in Redisson's layout: a Java reader is kept out and hears our unlock.
		if mode := str(t, rdb, "HGET", "compat", "mode"); mode != "write" {
			t.Fatalf("mode %q, want write", mode)
		}
		if n := str(t, rdb, "HGET", "compat", owner(t, c, w)+":write"); n != "1" {
			t.Fatalf("write field = %q, want 1", n)
		}
		if ms := num(t, rdb, "PTTL", "compat"); ms <= 0 || ms > 30000 {
			t.Fatalf("PTTL %d, want the watchdog's 30 s", ms)
		}
		if _, ok := eval(t, rdb, javaReadAcquire, []string{"compat", javaLease}, "30000", java, java+":write"); ok {
			t.Fatal("a Java reader got in while our writer holds")
		}
		messages := make(chan string, 4)
		subscribed := make(chan struct{})
		var once sync.Once
		subCtx, stop := context.WithCancel(ctx)
		received := make(chan error, 1)
		go func() {
			hook := rueidis.WithOnSubscriptionHook(subCtx, func(rueidis.PubSubSubscription) { once.Do(func() { close(subscribed) }) })
			received <- rdb.Receive(hook, sub, func(m rueidis.PubSubMessage) { messages <- m.Message })
		}()
		defer func() { stop(); <-received }()
		<-subscribed
		if err := rw.WriteLock().Unlock(w); err != nil {
			t.Fatal(err)
		}
		if m := <-messages; m != "1" {
			t.Fatalf("write unlock published %q, want 1 (wake all)", m)
		}
		if _, ok := eval(t, rdb, javaReadAcquire, []string{"compat", javaLease}, "30000", java, java+":write"); !ok {
			t.Fatal("the Java reader could not acquire after our write unlock")
		}
		if _, err := rw.WriteLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("our writer while a Java reader reads: %v, want ErrNotAcquired", err)
		}
		eval(t, rdb, javaReadRelease, []string{"compat", "redisson_rwlock:{compat}", javaLease + ":1"}, java, pub)
		if m := <-messages; m != "0" {
			t.Fatalf("java read unlock published %q", m)
		}

		// Our reader holds, in Redisson's layout: a Java writer is kept out and hears our unlock.
		r, err = rw.ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if mode, n := str(t, rdb, "HGET", "compat", "mode"), str(t, rdb, "HGET", "compat", owner(t, c, r)); mode != "read" || n != "1" {
			t.Fatalf("mode %q, reader field %q; want read, 1", mode, n)
		}
		if ms := num(t, rdb, "PTTL", leaseKey("compat", owner(t, c, r), 1)); ms <= 0 || ms > 30000 {
			t.Fatalf("read lease key PTTL %d", ms)
		}
		if _, ok := eval(t, rdb, javaWriteAcquire, []string{"compat"}, "30000", java+":write"); ok {
			t.Fatal("a Java writer got in while our reader reads")
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
		if m := <-messages; m != "0" {
			t.Fatalf("last read unlock published %q, want 0 (wake one)", m)
		}
		if _, ok := eval(t, rdb, javaWriteAcquire, []string{"compat"}, "30000", java+":write"); !ok {
			t.Fatal("the Java writer could not acquire after our read unlock")
		}
		if _, err := rw.ReadLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("our reader while a Java writer writes: %v, want ErrNotAcquired", err)
		}
		cmd(t, rdb, "DEL", "compat")
	})
}
