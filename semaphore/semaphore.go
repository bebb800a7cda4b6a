// Package semaphore holds distributed semaphores, Redisson's RSemaphore and RPermitExpirableSemaphore:
// the same keys, values and messages in Redis, so Go and Java processes share the permits of one name.
//
// A Semaphore counts permits: Acquire takes n of them, waiting until they are available, and Release
// gives n back. Permits have no owner, so any process may release them; one that dies holding permits
// keeps them from the pool until someone adds them back. An Expirable semaphore gives every permit an
// id and, optionally, a lease: a permit whose lease ends returns to the pool by itself, so a crashed
// worker cannot leak capacity.
//
// Waiting is driven by the release notification, which carries the new number of available permits:
// a release of 3 wakes, on each Client, as many waiters as 3 permits can serve (one asking for 2 and
// one asking for 1, say), not all of them and not just one.
package semaphore

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/lua"
)

var (
	acquireScript = lua.Load("semaphore_acquire.lua")
	addScript     = lua.Load("semaphore_add.lua")
	trySetScript  = lua.Load("semaphore_try_set.lua")
	drainScript   = lua.Load("semaphore_drain.lua")
)

const kind = "semaphore"

// Semaphore is a distributed counting semaphore on one name. It is cheap to create and safe for
// concurrent use; two Semaphore values with the same name are the same semaphore.
//
// Its permits are a count in Redis with no upper bound: Release may give back more than was ever
// taken, and the count is whatever the last TrySetPermits, AddPermits, Release, Acquire or Drain
// made it. A semaphore that was never set has no permits.
type Semaphore struct {
	c       *core.Client
	name    string
	channel string
}

// New returns the counting semaphore called name.
func New(c *redisync.Client, name string) (*Semaphore, error) {
	if c == nil {
		return nil, core.Invalid(kind, name, "nil client")
	}
	if name == "" {
		return nil, core.Invalid(kind, name, "empty name")
	}
	return &Semaphore{c: (*core.Client)(c), name: name, channel: channel(name)}, nil
}

// channel is where every semaphore of name announces its new count.
func channel(name string) string { return core.Prefixed("redisson_sc", name) }

// Name returns the semaphore's name, which is also its key in Redis.
func (s *Semaphore) Name() string { return s.name }

// TrySetPermits sets the number of available permits to n, only if the semaphore has never been set
// (its key does not exist). It reports whether it set them.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if err := s.check(ctx, n, 0); err != nil {
		return false, err
	}
	ok, err := s.c.Run(ctx, trySetScript, []string{s.name, s.channel}, []string{itoa(n), s.c.Publish()}).AsBool()
	if err != nil {
		return false, core.Errorf(kind, s.name, err)
	}
	return ok, nil
}

// AddPermits adds n permits, or removes -n when n is negative; the count may go below zero, and
// acquirers then wait until enough are released. Waiters are woken when the count allows. n == 0 is
// refused: it would only create the key, which makes TrySetPermits fail.
func (s *Semaphore) AddPermits(ctx context.Context, n int64) error {
	if ctx == nil {
		return core.Invalid(kind, s.name, "nil context")
	}
	if n == 0 {
		return core.Invalid(kind, s.name, "adding 0 permits")
	}
	return s.add(ctx, n)
}

// Acquire takes n permits, waiting until n are available at once, ctx ends, or the Client is closed.
//
// An error never means the permits were taken, with one exception that no client can rule out: when
// the connection fails while the acquiring script runs, the error is the connection's, and the script
// may have taken the permits on the server. Nobody then holds them; AddPermits can put them back.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	return s.acquire(ctx, n, -1)
}

// TryAcquire is Acquire with a wait bound: it gives up with redisync.ErrNotAcquired when n permits are
// not taken within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64, wait time.Duration) error {
	if wait < 0 {
		return core.Invalid(kind, s.name, "negative wait %v", wait)
	}
	return s.acquire(ctx, n, wait)
}

func (s *Semaphore) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if err := s.check(ctx, n, 1); err != nil {
		return err
	}
	keys, args := []string{s.name}, []string{itoa(n)}
	_, err := s.c.Acquire(ctx, wait, core.Wait{
		Channel: s.channel,
		Weight:  n,
		Policy:  wake,
		Try: func(ctx context.Context) (bool, time.Duration, error) {
			reply, notReplicated := core.SplitReplication(s.c.RunAcquire(ctx, acquireScript, keys, args))
			ok, err := reply.AsBool()
			if ok && err == nil {
				return true, 0, notReplicated // Acquire gives it back when it was not replicated
			}
			return ok, 0, err
		},
		Undo: func(ctx context.Context) { s.add(ctx, n) },
	})
	if err != nil {
		return core.Errorf(kind, s.name, err)
	}
	return nil
}

// Release gives back n permits and wakes as many waiters as the new count can serve. Nothing checks
// that they were acquired. It releases even when ctx has been cancelled.
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if err := s.check(ctx, n, 1); err != nil {
		return err
	}
	return s.add(context.WithoutCancel(ctx), n)
}

func (s *Semaphore) add(ctx context.Context, n int64) error {
	err := s.c.Run(ctx, addScript, []string{s.name, s.channel}, []string{itoa(n), s.c.Publish()}).Error()
	if err != nil {
		return core.Errorf(kind, s.name, err)
	}
	return nil
}

// Available returns the number of permits available now; it is negative after AddPermits removed
// more than were available.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	if ctx == nil {
		return 0, core.Invalid(kind, s.name, "nil context")
	}
	rdb := s.c.RDB()
	n, err := rdb.Do(ctx, rdb.B().Get().Key(s.name).Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		return 0, core.Errorf(kind, s.name, err)
	}
	return n, nil
}

// Drain takes every available permit and returns how many there were (0 when the semaphore was never
// set, which then stays unset). As in Redisson, the count is 0 afterwards even when it was negative:
// the negative count is what Drain returns.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	if ctx == nil {
		return 0, core.Invalid(kind, s.name, "nil context")
	}
	n, err := s.c.Run(ctx, drainScript, []string{s.name}, nil).AsInt64()
	if err != nil {
		return 0, core.Errorf(kind, s.name, err)
	}
	return n, nil
}

// Do runs fn while holding n permits: it acquires them (waiting as Acquire does), runs fn, and
// releases them, also when fn fails.
func (s *Semaphore) Do(ctx context.Context, n int64, fn func(ctx context.Context) error) error {
	if err := s.Acquire(ctx, n); err != nil {
		return err
	}
	ferr := fn(ctx)
	return errors.Join(ferr, s.Release(ctx, n))
}

// check refuses a nil ctx and a permit count below least.
func (s *Semaphore) check(ctx context.Context, n, least int64) error {
	if ctx == nil {
		return core.Invalid(kind, s.name, "nil context")
	}
	if n < least {
		return core.Invalid(kind, s.name, "%d permits: want at least %d", n, least)
	}
	return nil
}

// wake is the notifier's policy for semaphore channels: the message is the new number of available
// permits, which is how much waiting weight it may wake. A message that is not a number (no process
// of ours or Redisson's sends one) wakes everybody to look for themselves.
func wake(message string) int64 {
	n, err := strconv.ParseInt(message, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
