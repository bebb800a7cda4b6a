package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

// writeInBackground starts a writer that waits up to 10 s, then unlocks when told to.
func writeInBackground(t *testing.T, rw *rwlock.RWLock) (in <-chan error, release chan<- struct{}, done <-chan error) {
	inc, rel, donec := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		held, err := rw.WriteLock().TryLock(context.Background(), 10*time.Second)
		inc <- err
		if err != nil {
			donec <- nil
			return
		}
		<-rel
		donec <- rw.WriteLock().Unlock(held)
	}()
	return inc, rel, donec
}

func TestWriterPreference(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		c := tg.Client(t)
		parked := func(name string) {
			testkit.Eventually(t, 5*time.Second, func() error {
				if waiting(c, name) == 0 {
					return errors.New("writer not parked")
				}
				return nil
			})
			subscribed(t, c, name)
		}

		// By default a new reader gets in while a writer waits: readers can starve writers.
		plain := mustNew(t, c, "prefer-off")
		r1, err := plain.ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		in, release, done := writeInBackground(t, plain)
		parked("prefer-off")
		r2, err := plain.ReadLock().TryLock(ctx, 0)
		if err != nil {
			t.Fatalf("reader while a writer waits, no preference: %v", err)
		}
		for _, r := range []context.Context{r2, r1} {
			if err := plain.ReadLock().Unlock(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-in; err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		// With writer preference a waiting writer keeps new readers out; readers inside re-enter.
		rw := mustNew(t, c, "prefer", rwlock.WithWriterPreference())
		r1, err = rw.ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		in, release, done = writeInBackground(t, rw)
		parked("prefer")
		if n := num(t, rdb, "ZCARD", "redisync_rwlock_writers:{prefer}"); n != 1 {
			t.Fatalf("%d writers announced, want 1", n)
		}
		if _, err := rw.ReadLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("new reader while a writer waits: %v, want ErrNotAcquired", err)
		}
		again, err := rw.ReadLock().Lock(r1)
		if err != nil {
			t.Fatalf("re-entry of a reader inside while a writer waits: %v", err)
		}
		readerIn := make(chan error, 1)
		go func() {
			held, err := rw.ReadLock().TryLock(ctx, 10*time.Second)
			if err == nil {
				err = rw.ReadLock().Unlock(held)
			}
			readerIn <- err
		}()
		time.Sleep(200 * time.Millisecond)
		for _, r := range []context.Context{again, r1} {
			if err := rw.ReadLock().Unlock(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-in; err != nil {
			t.Fatalf("writer after the readers left: %v", err)
		}
		if n := num(t, rdb, "EXISTS", "redisync_rwlock_writers:{prefer}"); n != 0 {
			t.Fatal("the writer's announcement outlived its acquisition")
		}
		select {
		case err := <-readerIn:
			t.Fatalf("reader got in while the writer writes: %v", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := <-readerIn; err != nil {
			t.Fatalf("reader kept out by the writer, after it left: %v", err)
		}

		// A writer that gives up withdraws at once.
		r1, err = rw.ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.WriteLock().TryLock(ctx, 300*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("writer while a reader reads: %v, want ErrNotAcquired", err)
		}
		if n := num(t, rdb, "EXISTS", "redisync_rwlock_writers:{prefer}"); n != 0 {
			t.Fatal("a writer that gave up is still announced")
		}
		r2, err = rw.ReadLock().TryLock(ctx, 0)
		if err != nil {
			t.Fatalf("reader after the writer gave up: %v", err)
		}
		for _, r := range []context.Context{r2, r1} {
			if err := rw.ReadLock().Unlock(r); err != nil {
				t.Fatal(err)
			}
		}
	})
}
