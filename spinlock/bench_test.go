package spinlock_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/spinlock"
)

// rlock's B1 and B3 Go benchmarks for the spin lock, whose uncontended Lock and Unlock are rlock's
// scripts without a waiter's set-up:
//
//	go test -run '^$' -bench . -benchmem ./spinlock/ ./rlock/

// BenchmarkLockUnlock is B1: one goroutine, a fresh key each time.
func BenchmarkLockUnlock(b *testing.B) {
	c := testkit.Standalone(b).Client(b)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l, err := spinlock.New(c, "bench:b1:"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		held, err := l.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(held); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockUnlockParallel is B3: 50 goroutines on the 2-core reference machine, one client, each
// goroutine on its own key.
func BenchmarkLockUnlockParallel(b *testing.B) {
	c := testkit.Standalone(b).Client(b)
	var next atomic.Int64
	b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		l, err := spinlock.New(c, "bench:b3:"+strconv.FormatInt(next.Add(1), 10))
		if err != nil {
			b.Error(err)
			return
		}
		ctx := context.Background()
		for pb.Next() {
			held, err := l.Lock(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Unlock(held); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
