package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/spinlock"
)

// A primitive under the fuzz: its keys in Redis, each with the type it keeps there, and its methods.
type fuzzed struct {
	name string
	keys func(n string) []fuzzKey
	// calls returns the primitive's methods on n, through c (the holder's calls, which take the
	// object first so that the others meet a holder and wait, through h).
	calls func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall
}

type fuzzKey struct {
	key, own string // own: "hash", "count" (a string holding a number), "zset", "list"
}

type fuzzCall struct {
	what string
	call func(ctx context.Context) error
}

// lockCalls are every method of a lock, l on one Client and rival, which excludes it, on another:
// alone, then while rival holds (so that a waiter records itself beside the lock).
func lockCalls(l, rival interface {
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
	ForceUnlock(ctx context.Context) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int, error)
	TTL(ctx context.Context) (time.Duration, error)
}) []fuzzCall {
	held := func(ctx context.Context, err error) error {
		if err == nil {
			err = l.Unlock(ctx)
		}
		return err
	}
	return []fuzzCall{
		{"Lock", func(ctx context.Context) error { return held(l.Lock(ctx)) }},
		{"TryLock", func(ctx context.Context) error { return held(l.TryLock(ctx, 0)) }},
		{"IsLocked", func(ctx context.Context) error { _, err := l.IsLocked(ctx); return err }},
		{"HoldCount", func(ctx context.Context) error { _, err := l.HoldCount(redisync.WithOwner(ctx)); return err }},
		{"TTL", func(ctx context.Context) error { _, err := l.TTL(ctx); return err }},
		{"Unlock", func(ctx context.Context) error { return l.Unlock(redisync.WithOwner(ctx)) }},
		{"contended TryLock", func(ctx context.Context) error {
			r, err := rival.Lock(ctx)
			if err != nil {
				return err
			}
			defer rival.Unlock(r)
			_, err = l.TryLock(ctx, 50*time.Millisecond)
			return err
		}},
		{"ForceUnlock", func(ctx context.Context) error { _, err := l.ForceUnlock(ctx); return err }},
	}
}

var fuzzedPrimitives = []fuzzed{
	{name: "rlock", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "hash"}, {"redisson_lock_token:{" + n + "}", "count"},
			{"redisync_lock_waiters:{" + n + "}", "zset"}, {"redisync_lock_clients:{" + n + "}", "zset"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		return lockCalls(must(rlock.New(c, n, rlock.WithFencing())), must(rlock.New(h, n, rlock.WithFencing())))
	}},
	{name: "spin lock", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "hash"}, {"redisync_lock_waiters:{" + n + "}", "zset"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		return lockCalls(must(spinlock.New(c, n)), must(rlock.New(h, n)))
	}},
	{name: "fair lock", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "hash"}, {"redisson_lock_token:{" + n + "}", "count"}, {"redisson_lock_queue:{" + n + "}", "list"},
			{"redisson_lock_timeout:{" + n + "}", "zset"}, {"redisync_fair_waiters:{" + n + "}", "hash"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		return lockCalls(must(fairlock.New(c, n, fairlock.WithFencing())), must(fairlock.New(h, n)))
	}},
	{name: "read-write lock", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "hash"}, {"redisync_rwlock_writers:{" + n + "}", "zset"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		rw := must(rwlock.New(c, n, rwlock.WithWriterPreference()))
		other := must(rwlock.New(h, n, rwlock.WithWriterPreference()))
		return append(lockCalls(rw.ReadLock(), other.WriteLock()), lockCalls(rw.WriteLock(), other.ReadLock())...)
	}},
	{name: "semaphore", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "count"}, {"redisync_semaphore_waiters:{" + n + "}", "zset"},
			{"redisync_semaphore_clients:{" + n + "}", "zset"}, {"redisync_semaphore_grants:{" + n + "}", "hash"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		s := must(semaphore.New(c, n))
		return []fuzzCall{
			{"TrySetPermits", func(ctx context.Context) error { _, err := s.TrySetPermits(ctx, 1); return err }},
			{"Acquire", func(ctx context.Context) error {
				if err := s.Acquire(ctx, 1); err != nil {
					return err
				}
				return s.Release(ctx, 1)
			}},
			{"contended TryAcquire", func(ctx context.Context) error {
				if err := s.TryAcquire(ctx, 1, 0); err != nil {
					return err
				}
				defer s.Release(ctx, 1)
				err := s.TryAcquire(ctx, 1, 50*time.Millisecond)
				if err == nil {
					err = errors.New("two permits taken from one")
				}
				return err
			}},
			{"Available", func(ctx context.Context) error { _, err := s.Available(ctx); return err }},
			{"ReleaseIfExists", func(ctx context.Context) error { _, err := s.ReleaseIfExists(ctx, 1); return err }},
			{"Drain", func(ctx context.Context) error { _, err := s.Drain(ctx); return err }},
			{"Expire", func(ctx context.Context) error { _, err := s.Expire(ctx, time.Minute); return err }},
			{"Delete", func(ctx context.Context) error { _, err := s.Delete(ctx); return err }},
		}
	}},
	{name: "expirable semaphore", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "count"}, {"{" + n + "}:timeout", "zset"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		e := must(semaphore.NewExpirable(c, n, semaphore.WithLease(time.Minute)))
		return []fuzzCall{
			{"TrySetPermits", func(ctx context.Context) error { _, err := e.TrySetPermits(ctx, 1); return err }},
			{"Acquire", func(ctx context.Context) error {
				ids, err := e.TryAcquire(ctx, 1, 50*time.Millisecond)
				if err != nil {
					return err
				}
				if err := e.UpdateLease(ctx, ids[0], time.Minute); err != nil {
					return err
				}
				if _, err := e.LeaseLeft(ctx, ids[0]); err != nil {
					return err
				}
				return e.Release(ctx, ids...)
			}},
			{"Permits", func(ctx context.Context) error { _, err := e.Permits(ctx); return err }},
			{"AddPermits", func(ctx context.Context) error { return e.AddPermits(ctx, 1) }},
			{"Expire", func(ctx context.Context) error { _, err := e.Expire(ctx, time.Minute); return err }},
			{"Delete", func(ctx context.Context) error { _, err := e.Delete(ctx); return err }},
		}
	}},
	{name: "countdown latch", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "count"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		l := must(countdown.New(c, n))
		return []fuzzCall{
			{"Count", func(ctx context.Context) error { _, err := l.Count(ctx); return err }},
			{"TryAwait", func(ctx context.Context) error { return l.TryAwait(ctx, 50*time.Millisecond) }},
			{"CountDown", func(ctx context.Context) error { return l.CountDown(ctx) }},
			{"TrySetCount", func(ctx context.Context) error { _, err := l.TrySetCount(ctx, 1); return err }},
			{"Delete", func(ctx context.Context) error { _, err := l.Delete(ctx); return err }},
		}
	}},
	{name: "rate limiter", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "hash"}, {"{" + n + "}:value", "count"}, {"{" + n + "}:permits", "zset"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		l := must(ratelimit.New(c, n))
		cfg := ratelimit.Config{Rate: 2, Interval: time.Minute}
		return []fuzzCall{
			{"TrySetRate", func(ctx context.Context) error { _, err := l.TrySetRate(ctx, cfg); return err }},
			{"TryAcquire", func(ctx context.Context) error { return l.TryAcquire(ctx, 1, 50*time.Millisecond) }},
			{"Release", func(ctx context.Context) error { return l.Release(ctx, 1) }},
			{"Available", func(ctx context.Context) error { _, err := l.Available(ctx); return err }},
			{"TTL", func(ctx context.Context) error { _, err := l.TTL(ctx); return err }},
			{"SetRate", func(ctx context.Context) error { return l.SetRate(ctx, cfg, ratelimit.KeepState()) }},
			{"Expire", func(ctx context.Context) error { _, err := l.Expire(ctx, time.Minute); return err }},
			{"Delete", func(ctx context.Context) error { _, err := l.Delete(ctx); return err }},
		}
	}},
	{name: "group lock", keys: func(n string) []fuzzKey {
		return []fuzzKey{{n, "hash"}}
	}, calls: func(t *testing.T, c, h *redisync.Client, n string) []fuzzCall {
		g := must(multilock.NewGroup(c, n, []string{"a", "b"}))
		calls := lockCalls(groupLock{g}, groupLock{must(multilock.NewGroup(h, n, []string{"b"}))})
		return append(calls, fuzzCall{"IsHeld", func(ctx context.Context) error { _, err := g.IsHeld(redisync.WithOwner(ctx)); return err }})
	}},
}

// groupLock is a Group with the methods of a lock that it does not have: HoldCount and TTL read
// whether it is locked, which is what they would read.
type groupLock struct{ *multilock.Group }

func (g groupLock) HoldCount(ctx context.Context) (int, error) {
	_, err := g.IsHeld(ctx)
	return 0, err
}
func (g groupLock) TTL(ctx context.Context) (time.Duration, error) {
	_, err := g.IsLocked(ctx)
	return 0, err
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fuzzTypes are the kinds of data the fuzz writes under a key: never the key's own, so that what it
// writes is always someone else's.
var fuzzTypes = []struct {
	kind, own string
	cmd       func(key, v string) []string
}{
	{"string", "count", func(k, v string) []string { return []string{"SET", k, "x" + v} }},  // never a number
	{"hash", "hash", func(k, v string) []string { return []string{"HSET", k, "user:", v} }}, // no primitive's field
	{"list", "list", func(k, v string) []string { return []string{"RPUSH", k, v} }},
	{"set", "", func(k, v string) []string { return []string{"SADD", k, v} }},
	{"sorted set", "zset", func(k, v string) []string { return []string{"ZADD", k, "1", v} }},
	{"stream", "", func(k, v string) []string { return []string{"XADD", k, "*", "f", v} }},
}

// The errors a call may answer with on foreign data: a refusal, or what the primitive says when it
// did not get what it asked for (foreign data under a key it does not touch on the way).
var fuzzAnswers = []error{redisync.ErrWrongType, redisync.ErrNotAcquired, redisync.ErrNotHeld, redisync.ErrNotInitialized}

var fuzzSeq atomic.Int64

// FuzzForeignData writes data of another type, with an arbitrary value, under one of a primitive's
// keys (its name or a side key), then calls every method of the primitive, and requires each to
// answer (nil, or an error matching a sentinel, whose message shows no internals) within its bound,
// never to panic, and the foreign key to be left exactly as it was. Plain go test runs the seed
// corpus: every primitive, every key, every type.
func FuzzForeignData(f *testing.F) {
	for p, prim := range fuzzedPrimitives {
		for k, key := range prim.keys("n") {
			for ty, typ := range fuzzTypes {
				if typ.own != key.own {
					f.Add(uint8(p), uint8(k), uint8(ty), "hello")
				}
			}
		}
	}
	tg := testkit.Standalone(f)
	rdb := tg.Redis(f)
	c, h := tg.Client(f), tg.Client(f)
	f.Fuzz(func(t *testing.T, p, k, ty uint8, value string) {
		prim := fuzzedPrimitives[int(p)%len(fuzzedPrimitives)]
		name := fmt.Sprintf("fuzz:%d:%d", time.Now().UnixNano(), fuzzSeq.Add(1))
		keys := prim.keys(name)
		key := keys[int(k)%len(keys)]
		typ := fuzzTypes[int(ty)%len(fuzzTypes)]
		if typ.own == key.own {
			t.Skip("the key's own type")
		}
		testkit.Do(t, rdb, typ.cmd(key.key, value)...)
		before := dump(t, rdb, key.key)
		for _, call := range prim.calls(t, c, h, name) {
			what := fmt.Sprintf("%s %s with a %s under %s", prim.name, call.what, typ.kind, key.key)
			done := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			go func() { done <- call.call(ctx) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: no answer after 30s", what)
			}
			cancel()
			if err != nil && !matchesAny(err, fuzzAnswers) {
				t.Errorf("%s: %v", what, err)
			}
			testkit.NoInternals(t, what, err)
			if after := dump(t, rdb, key.key); after != before {
				t.Fatalf("%s changed the foreign key:\nbefore %s\nafter  %s", what, before, after)
			}
		}
		keysOf := append([]string{name}, tg.Keys(t)...)
		for _, k := range keysOf {
			if strings.Contains(k, name) {
				testkit.Do(t, rdb, "DEL", k)
			}
		}
	})
}

func matchesAny(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// dump is key's value and whether it expires.
func dump(t *testing.T, rdb rueidis.Client, key string) string {
	t.Helper()
	return testkit.DoString(t, rdb, "DUMP", key) + fmt.Sprint(" expires:", testkit.DoString(t, rdb, "PTTL", key) != "-1")
}
