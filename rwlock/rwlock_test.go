package rwlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func mustNew(t testing.TB, c *redisync.Client, name string, opts ...rwlock.Option) *rwlock.RWLock {
	t.Helper()
	rw, err := rwlock.New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// cmd runs a raw command whose first argument is a key, as another process would.
func cmd(t testing.TB, rdb rueidis.Client, args ...string) rueidis.RedisMessage {
	t.Helper()
	return testkit.Do(t, rdb, args...)
}

func num(t testing.TB, rdb rueidis.Client, args ...string) int64 {
	t.Helper()
	m := cmd(t, rdb, args...)
	n, err := m.AsInt64()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return n
}

func str(t testing.TB, rdb rueidis.Client, args ...string) string {
	t.Helper()
	m := cmd(t, rdb, args...)
	s, err := m.ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("%v: %v", args, err)
	}
	return s
}

// owner returns the hash field of the owner that ctx carries on c: "<clientID>:<ownerID>".
func owner(t testing.TB, c *redisync.Client, ctx context.Context) string {
	t.Helper()
	id, ok := redisync.OwnerID(ctx)
	if !ok {
		t.Fatal("ctx carries no owner")
	}
	return c.ID() + ":" + strconv.FormatInt(id, 10)
}

// leaseKey is Redisson's per-read-hold lease key for a name without braces.
func leaseKey(name, owner string, k int) string {
	return "{" + name + "}:" + owner + ":rwlock_timeout:" + strconv.Itoa(k)
}

// rwSection detects a writer inside together with anyone else.
type rwSection struct {
	readers, writers, maxReaders, bad atomic.Int64
}

func (s *rwSection) enterRead() {
	n := s.readers.Add(1)
	for m := s.maxReaders.Load(); n > m && !s.maxReaders.CompareAndSwap(m, n); m = s.maxReaders.Load() {
	}
	if s.writers.Load() != 0 {
		s.bad.Add(1)
	}
}

func (s *rwSection) leaveRead() { s.readers.Add(-1) }

func (s *rwSection) enterWrite() {
	if s.writers.Add(1) != 1 || s.readers.Load() != 0 {
		s.bad.Add(1)
	}
}

func (s *rwSection) leaveWrite() { s.writers.Add(-1) }

func TestReadersShareWritersExclude(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rw := mustNew(t, tg.Client(t), "shared")
		var sec rwSection

		// Eight readers inside at once, while a writer is kept out.
		var inside sync.WaitGroup
		inside.Add(8)
		leave := make(chan struct{})
		var readers sync.WaitGroup
		for range 8 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				held, err := rw.ReadLock().TryLock(ctx, 10*time.Second)
				if err != nil {
					t.Error(err)
					inside.Done()
					return
				}
				sec.enterRead()
				inside.Done()
				<-leave
				sec.leaveRead()
				if err := rw.ReadLock().Unlock(held); err != nil {
					t.Error(err)
				}
			}()
		}
		inside.Wait()
		if got := sec.maxReaders.Load(); got != 8 {
			t.Fatalf("%d readers inside at once, want 8", got)
		}
		if _, err := rw.WriteLock().TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("writer while 8 read: %v, want ErrNotAcquired", err)
		}
		wrote := make(chan error, 1)
		go func() {
			held, err := rw.WriteLock().TryLock(ctx, 10*time.Second)
			if err == nil {
				sec.enterWrite()
				sec.leaveWrite()
				err = rw.WriteLock().Unlock(held)
			}
			wrote <- err
		}()
		close(leave)
		readers.Wait()
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}

		// A mix of readers and writers on two clients: writers alone, readers together.
		other := mustNew(t, tg.Client(t), "shared")
		var wg sync.WaitGroup
		for i := range 10 {
			l := rw
			if i%2 == 1 {
				l = other
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 15 {
					if i < 2 { // two writers
						err := l.WriteLock().Do(ctx, func(context.Context) error {
							sec.enterWrite()
							time.Sleep(time.Millisecond)
							sec.leaveWrite()
							return nil
						})
						if err != nil {
							t.Error(err)
							return
						}
						continue
					}
					err := l.ReadLock().Do(ctx, func(context.Context) error {
						sec.enterRead()
						time.Sleep(time.Duration(1+j%3) * time.Millisecond)
						sec.leaveRead()
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if n := sec.bad.Load(); n != 0 {
			t.Fatalf("%d entries overlapped a writer", n)
		}
		if n := num(t, tg.Redis(t), "EXISTS", "shared"); n != 0 {
			t.Fatal("lock still exists after every holder unlocked")
		}
	})
}

// A reader asking for the write lock is refused at once, and keeps reading. (The conformance suite
// checks re-entry and ownership of each side.)
func TestUpgradeRefused(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rw := mustNew(t, tg.Client(t), "upgrade")
		r, w := rw.ReadLock(), rw.WriteLock()
		held, err := r.Lock(context.Background())
		require.NoError(t, err)
		_, err = w.Lock(held)
		require.ErrorIs(t, err, rwlock.ErrUpgrade, "upgrade")
		require.ErrorIs(t, err, redisync.ErrAlreadyHeld, "upgrade")
		n, err := r.HoldCount(held)
		require.NoError(t, err)
		require.Equal(t, 1, n, "read holds after a refused upgrade")
		require.NoError(t, held.Err(), "the read hold after a refused upgrade")
		require.NoError(t, r.Unlock(held))
	})
}

func TestNonReentrant(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rw := mustNew(t, tg.Client(t), "non-reentrant", rwlock.NonReentrant())
		w, err := rw.WriteLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.WriteLock().Lock(w); !errors.Is(err, redisync.ErrAlreadyHeld) {
			t.Fatalf("write re-entry: %v, want ErrAlreadyHeld", err)
		}
		r, err := rw.ReadLock().Lock(w) // downgrade is not re-entry
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.ReadLock().Lock(r); !errors.Is(err, redisync.ErrAlreadyHeld) {
			t.Fatalf("read re-entry: %v, want ErrAlreadyHeld", err)
		}
		if err := rw.WriteLock().Unlock(w); err != nil {
			t.Fatal(err)
		}
		if err := rw.ReadLock().Unlock(r); err != nil {
			t.Fatal(err)
		}
	})
}

func TestForceUnlock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		c := tg.Client(t)
		rw := mustNew(t, c, "forced")
		w, err := rw.WriteLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rw.ReadLock().Lock(w)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := rw.ReadLock().ForceUnlock(ctx); ok || err != nil {
			t.Fatalf("read ForceUnlock of a written lock: %v, %v; want false", ok, err)
		}
		if w.Err() != nil {
			t.Fatal("writer lost its hold to a read ForceUnlock")
		}
		if ok, err := rw.WriteLock().ForceUnlock(ctx); !ok || err != nil {
			t.Fatalf("write ForceUnlock: %v, %v", ok, err)
		}
		for _, held := range []context.Context{w, r} {
			if !errors.Is(context.Cause(held), redisync.ErrLost) {
				t.Fatalf("holder ctx after ForceUnlock: %v, want ErrLost", context.Cause(held))
			}
		}
		rdb := tg.Redis(t)
		if n := num(t, rdb, "EXISTS", "forced", leaseKey("forced", owner(t, c, w), 1)); n != 0 {
			t.Fatalf("%d keys left after ForceUnlock", n)
		}
		if err := rw.WriteLock().Unlock(w); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("unlock after ForceUnlock: %v, want ErrNotHeld", err)
		}
		if err := rw.ReadLock().Unlock(r); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("unlock after ForceUnlock: %v, want ErrNotHeld", err)
		}
	})
}
