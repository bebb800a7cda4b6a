package rlock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// BenchmarkLockUnlockEvents is BenchmarkLockUnlock with and without WithEvents: without it the
// allocations per pair are those of BenchmarkLockUnlock; with a callback that counts, one more (what
// notes whether a hand-over was taken; the events themselves go by value).
//
//	go test -run '^$' -bench LockUnlockEvents -benchmem ./rlock/
func BenchmarkLockUnlockEvents(b *testing.B) {
	var events atomic.Int64
	for _, bc := range []struct {
		name string
		opts []redisync.Option
	}{
		{"unset", nil},
		{"set", []redisync.Option{redisync.WithEvents(func(redisync.Event) { events.Add(1) })}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := testkit.Standalone(b).Client(b, bc.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l, err := rlock.New(c, "bench:events:"+strconv.Itoa(i))
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
		})
	}
}
