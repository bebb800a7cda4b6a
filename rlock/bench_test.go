package rlock_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// The Go benchmarks of BENCHMARKS.md's B1 and B3, beside the raw floor they are judged against (SET NX
// PX, then one compare-and-delete script: the least any lock can do). The peers are compared in the
// bench module; these show the library's own cost per pair, allocations included:
//
//	go test -run '^$' -bench . -benchmem ./rlock/

// BenchmarkLockUnlock is B1: one goroutine, a fresh key each time.
func BenchmarkLockUnlock(b *testing.B) {
	c := testkit.Standalone(b).Client(b)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l, err := rlock.New(c, "bench:b1:"+strconv.Itoa(i))
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

// BenchmarkLockUnlockParallel is B3: 50 goroutines (25 per GOMAXPROCS on the 2-core reference machine),
// one client, each goroutine on its own key.
func BenchmarkLockUnlockParallel(b *testing.B) {
	c := testkit.Standalone(b).Client(b)
	var next atomic.Int64
	b.SetParallelism(parallelism())
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		l, err := rlock.New(c, "bench:b3:"+strconv.FormatInt(next.Add(1), 10))
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

var floorRelease = rueidis.NewLuaScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// floorPair is the raw floor's Lock+Unlock.
func floorPair(ctx context.Context, rdb rueidis.Client, key, token string) error {
	if err := rdb.Do(ctx, rdb.B().Set().Key(key).Value(token).Nx().PxMilliseconds(30000).Build()).Error(); err != nil {
		return err
	}
	return floorRelease.Exec(ctx, rdb, []string{key}, []string{token}).Error()
}

// BenchmarkFloor is B1's floor.
func BenchmarkFloor(b *testing.B) {
	rdb := testkit.Standalone(b).Redis(b)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := floorPair(ctx, rdb, "bench:f1:"+strconv.Itoa(i), strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloorParallel is B3's floor.
func BenchmarkFloorParallel(b *testing.B) {
	rdb := testkit.Standalone(b).Redis(b)
	var next atomic.Int64
	b.SetParallelism(parallelism())
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:f3:" + strconv.FormatInt(next.Add(1), 10)
		ctx := context.Background()
		for i := 0; pb.Next(); i++ {
			if err := floorPair(ctx, rdb, key, strconv.Itoa(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// parallelism gives about 50 goroutines whatever GOMAXPROCS is.
func parallelism() int {
	return max(1, 50/runtime.GOMAXPROCS(0))
}
