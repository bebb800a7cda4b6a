package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// A Java process on the same name, running Redisson's own scripts (java_test.go): Go and Java readers
// share, each side's writer excludes the other's readers and hears the other's unlock.

func TestRedissonCompatibility(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		java := newJavaRW(t, tg, "compat")
		const thread = 41
		c := tg.Client(t, redisync.WithRecheckInterval(time.Minute))
		rw := mustNew(t, c, "compat")

		// A Java reader holds: our readers share, our writer waits and its unlock message wakes it.
		if ok, _ := java.tryRead(thread); !ok {
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
		java.unlockRead(thread)
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
		if ok, _ := java.tryRead(thread); ok {
			t.Fatal("a Java reader got in while our writer holds")
		}
		messages := java.j.Subscribe(java.channel())
		next := func(what, want string) {
			t.Helper()
			if m, ok := messages.Next(10 * time.Second); !ok || m != want {
				t.Fatalf("%s published %q (received: %v), want %q", what, m, ok, want)
			}
		}
		if err := rw.WriteLock().Unlock(w); err != nil {
			t.Fatal(err)
		}
		next("our write unlock", "1") // wake all
		if ok, _ := java.tryRead(thread); !ok {
			t.Fatal("the Java reader could not acquire after our write unlock")
		}
		if _, err := rw.WriteLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("our writer while a Java reader reads: %v, want ErrNotAcquired", err)
		}
		java.unlockRead(thread)
		next("the Java read unlock", "0")

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
		if ok, _ := java.tryWrite(thread); ok {
			t.Fatal("a Java writer got in while our reader reads")
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
		next("our last read unlock", "0") // wake one
		if ok, _ := java.tryWrite(thread); !ok {
			t.Fatal("the Java writer could not acquire after our read unlock")
		}
		if _, err := rw.ReadLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("our reader while a Java writer writes: %v, want ErrNotAcquired", err)
		}
		cmd(t, rdb, "DEL", "compat")
	})
}
