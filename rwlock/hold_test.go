package rwlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// A write holder that fans out: goroutines sharing its ctx take the write lock in turn, while they
// may all hold the read lock at once (readers share) and release it in any order.
func TestWriteHolderFansOut(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rw := mustNew(t, tg.Client(t), "fan-out-rw")
		held, err := rw.WriteLock().Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		const n = 4
		var writers testkit.Section
		var wg sync.WaitGroup
		all := make(chan struct{})
		var inside sync.WaitGroup
		inside.Add(n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					w, err := rw.WriteLock().Lock(held)
					if err != nil {
						t.Error(err)
						return
					}
					writers.Enter()
					time.Sleep(100 * time.Microsecond)
					writers.Leave()
					if err := rw.WriteLock().Unlock(w); err != nil {
						t.Error(err)
						return
					}
				}
				r, err := rw.ReadLock().Lock(held)
				if err != nil {
					t.Error(err)
					inside.Done()
					return
				}
				inside.Done()
				<-all // every reader is inside at once
				if err := rw.ReadLock().Unlock(r); err != nil {
					t.Error(err)
				}
			}()
		}
		done := make(chan struct{})
		go func() { inside.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the write holder's goroutines could not all hold the read lock at once")
		}
		close(all)
		wg.Wait()
		if writers.Max() != 1 || writers.Entries() != 3*n {
			t.Fatalf("write fan-out: %d inside at once, %d entries of %d", writers.Max(), writers.Entries(), 3*n)
		}
		if err := rw.WriteLock().Unlock(held); err != nil {
			t.Fatal(err)
		}
	})
}

// the read lock counts as locked while the writer also holds it (Redisson's isLocked).
func TestReadLockIsLockedWhileWriterReads(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rw := mustNew(t, tg.Client(t), "writer-reads")
		w, err := rw.WriteLock().Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if locked, err := rw.ReadLock().IsLocked(w); err != nil || locked {
			t.Fatalf("read IsLocked with only a writer = %v, %v; want false", locked, err)
		}
		r, err := rw.ReadLock().Lock(w)
		if err != nil {
			t.Fatal(err)
		}
		if locked, err := rw.ReadLock().IsLocked(r); err != nil || !locked {
			t.Fatalf("read IsLocked while the writer reads = %v, %v; want true", locked, err)
		}
		if locked, err := rw.WriteLock().IsLocked(r); err != nil || !locked {
			t.Fatalf("write IsLocked = %v, %v; want true", locked, err)
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
		if err := rw.WriteLock().Unlock(w); err != nil {
			t.Fatal(err)
		}
	})
}
