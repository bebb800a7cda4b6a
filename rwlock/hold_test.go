package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// Goroutines fanned out from a write hold's ctx may all take the read lock at once (the writer
// reads: downgrade), keep other owners out meanwhile, and release it in any order. (The conformance
// suite checks that they take the write lock in turn.)
func TestWriteHolderFansOutToReaders(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rw := mustNew(t, tg.Client(t), "fan-out-rw")
		held, err := rw.WriteLock().Lock(context.Background())
		require.NoError(t, err)
		const n = 4
		reads := make(chan testkit.Acquired, n)
		for range n {
			go func() {
				r, err := rw.ReadLock().Lock(held)
				reads <- testkit.Acquired{Ctx: r, Err: err}
			}()
		}
		// Nobody releases before every goroutine is in: they all hold at once.
		var in []context.Context
		for range n {
			select {
			case r := <-reads:
				require.NoError(t, r.Err, "a fanned-out read")
				in = append(in, r.Ctx)
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d goroutines of the write hold read within 30s", len(in), n)
			}
		}
		n2, err := rw.ReadLock().HoldCount(held)
		require.NoError(t, err)
		require.Equal(t, n, n2, "read holds of the writer with every goroutine in")
		_, err = mustNew(t, tg.Client(t), "fan-out-rw").ReadLock().TryLock(context.Background(), 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "another owner's read while the writer holds")
		for i := len(in) - 1; i >= 0; i-- { // not in the order they came in
			require.NoError(t, rw.ReadLock().Unlock(in[i]))
		}
		require.NoError(t, rw.WriteLock().Unlock(held))
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
