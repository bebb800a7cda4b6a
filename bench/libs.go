package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/spinlock"
)

// A locker is one library's client on one deployment: what one process of its users would hold.
type locker interface {
	// Lock waits for key and returns how to release it.
	Lock(ctx context.Context, key string) (unlock func(context.Context) error, err error)
	Close()
}

// A waitLocker bounds a wait with an argument, as its users do (redisync: a ctx deadline is for the
// work, a wait bound is TryLock's own); contended workloads use it instead of a ctx deadline.
type waitLocker interface {
	TryLock(ctx context.Context, key string, wait time.Duration) (unlock func(context.Context) error, err error)
}

// lockWithin acquires key within wait: by lk's own wait bound if it has one, else by a ctx deadline.
func lockWithin(ctx context.Context, lk locker, key string, wait time.Duration) (func(context.Context) error, error) {
	if wl, ok := lk.(waitLocker); ok {
		return wl.TryLock(ctx, key, wait)
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	unlock, err := lk.Lock(actx, key)
	if err != nil {
		cancel()
		return nil, err
	}
	return func(ctx context.Context) error { // some peers tie the hold to the ctx it was taken with
		defer cancel()
		return unlock(ctx)
	}, nil
}

// A lib is a library under test, configured as its users configure it.
type lib struct {
	name   string
	config string // how it is configured, printed with the results
	floor  bool   // the raw floor: it does not wait, so it only runs uncontended workloads
	open   func(d *deployment, n *atomic.Int64) (locker, error)
}

// holdTTL is the lease of the peers that have no renewal, and matches redisync's default watchdog
// timeout.
const holdTTL = 30 * time.Second

var libs = []*lib{
	{
		name:   "floor",
		config: "rueidis: SET key tok NX PX 30000, release by one EVALSHA compare-and-delete; never waits",
		floor:  true,
		open:   openFloor,
	},
	{
		name:   "redisync",
		config: "rlock.New(client, key) with defaults: watchdog 30 s, Pub/Sub wake-up, re-entrant",
		open:   func(d *deployment, n *atomic.Int64) (locker, error) { return openRedisync(d, n) },
	},
	{
		name:   "rueidislock",
		config: "rueidislock v1.0.79: KeyMajority 1, NoLoopTracking (Redis >= 7.0.5), KeyValidity 5 s (default)",
		open:   openRueidislock,
	},
	{
		name:   "redsync",
		config: "redsync v4 + goredis v9 pool, defaults: 32 tries, retry delay 50-250 ms, expiry 8 s",
		open:   func(d *deployment, n *atomic.Int64) (locker, error) { return openRedsync(d, n) },
	},
	{
		name:   "redsync-1ms",
		config: "redsync v4 + goredis v9 pool, WithRetryDelay(1 ms), WithTries(MaxInt32), expiry 8 s",
		open: func(d *deployment, n *atomic.Int64) (locker, error) {
			return openRedsync(d, n, redsync.WithRetryDelay(time.Millisecond), redsync.WithTries(math.MaxInt32))
		},
	},
	{
		name:   "bsm",
		config: "bsm/redislock v0.9.4: TTL 30 s, RetryStrategy LinearBackoff(1 ms) (its default is no retry)",
		open:   openBsm,
	},
}

// variants are redisync's other locks that stand beside rlock in B3 and B4 (and B11): not peers,
// so never the best peer that redisync is judged against.
var variants = []*lib{
	{
		name:   "redisync-spin",
		config: "spinlock.New(client, key) with defaults: waiters poll by Redisson's exponential back-off, 1 ms doubling to 128 ms; watchdog 30 s",
		open:   openSpin,
	},
}

// variant reports whether the library named name is redisync's, or a variant of it.
func variant(name string) bool {
	return name == "redisync" || slices.ContainsFunc(variants, func(l *lib) bool { return l.name == name })
}

func peers() []*lib {
	var out []*lib
	for _, l := range libs {
		if !l.floor && l.name != "redisync" {
			out = append(out, l)
		}
	}
	return out
}

func rueidisClient(d *deployment, n *atomic.Int64) (rueidis.Client, error) {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs, DisableCache: true})
	if err != nil {
		return nil, err
	}
	return countingClient{rdb, n}, nil
}

func goredisClient(d *deployment, n *atomic.Int64) redis.UniversalClient {
	var c redis.UniversalClient
	if d.cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: d.addrs})
	} else {
		c = redis.NewClient(&redis.Options{Addr: d.addrs[0]})
	}
	c.AddHook(countHook{n})
	return c
}

// --- raw floor ---

var floorRelease = rueidis.NewLuaScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

type floorLocker struct {
	rdb    rueidis.Client
	prefix string
	seq    atomic.Int64
}

var errFloorBusy = errors.New("floor: key held (the floor never waits)")

func openFloor(d *deployment, n *atomic.Int64) (locker, error) {
	rdb, err := rueidisClient(d, n)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 8)
	rand.Read(b)
	return &floorLocker{rdb: rdb, prefix: hex.EncodeToString(b) + ":"}, nil
}

func (f *floorLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	tok := f.prefix + strconv.FormatInt(f.seq.Add(1), 10)
	err := f.rdb.Do(ctx, f.rdb.B().Set().Key(key).Value(tok).Nx().PxMilliseconds(holdTTL.Milliseconds()).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return nil, errFloorBusy
	}
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return floorRelease.Exec(ctx, f.rdb, []string{key}, []string{tok}).Error()
	}, nil
}

func (f *floorLocker) Close() { f.rdb.Close() }

// --- redisync ---

type redisyncLocker struct{ c *redisync.Client }

func openRedisync(d *deployment, n *atomic.Int64, opts ...redisync.Option) (locker, error) {
	rdb, err := rueidisClient(d, n)
	if err != nil {
		return nil, err
	}
	c, err := redisync.Wrap(rdb, opts...)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &redisyncLocker{c}, nil
}

func (r *redisyncLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return r.TryLock(ctx, key, -1)
}

// TryLock waits at most wait (no bound when wait < 0).
func (r *redisyncLocker) TryLock(ctx context.Context, key string, wait time.Duration) (func(context.Context) error, error) {
	l, err := rlock.New(r.c, key)
	if err != nil {
		return nil, err
	}
	return lockOwned(ctx, l, wait)
}

// ownedLock is a redisync lock whose owner travels in the ctx (rlock, fairlock).
type ownedLock interface {
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
}

// lockOwned locks l within wait (no bound when wait < 0) and returns how to release it.
func lockOwned(ctx context.Context, l ownedLock, wait time.Duration) (func(context.Context) error, error) {
	var held context.Context
	var err error
	if wait < 0 {
		held, err = l.Lock(ctx)
	} else {
		held, err = l.TryLock(ctx, wait)
	}
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { return l.Unlock(held) }, nil
}

func (r *redisyncLocker) Close() {
	r.c.Close()
	r.c.Redis().Close()
}

// --- redisync's spin lock ---

type spinLocker struct{ *redisyncLocker }

func openSpin(d *deployment, n *atomic.Int64) (locker, error) {
	lk, err := openRedisync(d, n)
	if err != nil {
		return nil, err
	}
	return spinLocker{lk.(*redisyncLocker)}, nil
}

func (s spinLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return s.TryLock(ctx, key, -1)
}

// TryLock waits at most wait (no bound when wait < 0).
func (s spinLocker) TryLock(ctx context.Context, key string, wait time.Duration) (func(context.Context) error, error) {
	l, err := spinlock.New(s.c, key)
	if err != nil {
		return nil, err
	}
	return lockOwned(ctx, l, wait)
}

// --- rueidislock ---

type rueidisLocker struct{ l rueidislock.Locker }

func openRueidislock(d *deployment, n *atomic.Int64) (locker, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: d.addrs},
		KeyMajority:    1,
		NoLoopTracking: true,
		ClientBuilder: func(opt rueidis.ClientOption) (rueidis.Client, error) {
			rdb, err := rueidis.NewClient(opt)
			if err != nil {
				return nil, err
			}
			return countingClient{rdb, n}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &rueidisLocker{l}, nil
}

func (r *rueidisLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { cancel(); return nil }, nil
}

func (r *rueidisLocker) Close() { r.l.Close() }

// --- redsync ---

type redsyncLocker struct {
	rs      *redsync.Redsync
	clients []redis.UniversalClient
	opts    []redsync.Option
}

func openRedsync(d *deployment, n *atomic.Int64, opts ...redsync.Option) (*redsyncLocker, error) {
	c := goredisClient(d, n)
	return &redsyncLocker{rs: redsync.New(goredis.NewPool(c)), clients: []redis.UniversalClient{c}, opts: opts}, nil
}

// openRedsyncMulti is RedLock over independent servers, one pool each.
func openRedsyncMulti(ds []*deployment, n *atomic.Int64, opts ...redsync.Option) *redsyncLocker {
	r := &redsyncLocker{opts: opts}
	var pools []redsyncredis.Pool
	for _, d := range ds {
		c := goredisClient(d, n)
		r.clients = append(r.clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	r.rs = redsync.New(pools...)
	return r
}

func (r *redsyncLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	m := r.rs.NewMutex(key, r.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := m.UnlockContext(ctx)
		return err
	}, nil
}

func (r *redsyncLocker) Close() {
	for _, c := range r.clients {
		c.Close()
	}
}

// --- bsm/redislock ---

type bsmLocker struct {
	c   redis.UniversalClient
	l   *redislock.Client
	opt *redislock.Options
}

func openBsm(d *deployment, n *atomic.Int64) (locker, error) {
	c := goredisClient(d, n)
	return &bsmLocker{c: c, l: redislock.New(c), opt: &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}}, nil
}

func (b *bsmLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	lk, err := b.l.Obtain(ctx, key, holdTTL, b.opt)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return lk.Release(ctx) }, nil
}

func (b *bsmLocker) Close() { b.c.Close() }
