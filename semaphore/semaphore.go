// Package semaphore holds distributed semaphores, Redisson's RSemaphore and RPermitExpirableSemaphore:
// the same keys, values and messages in Redis, so Go and Java processes share the permits of one name.
//
// A Semaphore counts permits: Acquire takes n of them, waiting until they are available, and Release
// gives n back. Permits have no owner, so any process may release them; one that dies holding permits
// keeps them from the pool until someone adds them back. An Expirable semaphore gives every permit an
// id and, optionally, a lease: a permit whose lease ends returns to the pool by itself, so a crashed
// worker cannot leak capacity.
//
// Waiting is driven by release notifications. A Semaphore's waiter records itself beside the count
// and each Client listens on a channel of its own: a release of 3 wakes as many waiters as 3 permits
// can serve (one asking for 2 and one asking for 1, say), across all Clients, those that tried least
// recently first, and not one waiter on every Client as Redisson's message alone would. Redisson's
// message (the new count) is still published for Java waiters, and an Expirable semaphore's waiters
// are woken by it, on each Client as many as the count can serve.
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
	"github.com/redisync/redisync/pubsub"
)

var (
	acquireScript = lua.Load("semaphore_acquire.lua")
	addScript     = lua.Load("semaphore_wake.lua", "semaphore_add.lua")
	trySetScript  = lua.Load("semaphore_wake.lua", "semaphore_try_set.lua")
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
	// The directed wake-up (semaphore_wake.lua): this client's wake channel, the waiter records, the
	// clients, and the wake channels' prefix. windowMs is "0" where it is off.
	wake, waiters, clients, wakePrefix, windowMs string
}

// New returns the counting semaphore called name.
func New(c *redisync.Client, name string) (*Semaphore, error) {
	if c == nil {
		return nil, core.Invalid(kind, name, "nil client")
	}
	if name == "" {
		return nil, core.Invalid(kind, name, "empty name")
	}
	s := &Semaphore{c: (*core.Client)(c), name: name, channel: channel(name), windowMs: "0"}
	side := core.SideKeys(name, "redisync_semaphore_waiters", "redisync_semaphore_clients", "redisync_semaphore__wake")
	s.waiters, s.clients = side[0], side[1]
	s.wakePrefix = side[2] + ":"
	s.wake = s.wakePrefix + s.c.ID()
	if s.c.NumSub() != "" { // subscriber counts can be trusted
		s.windowMs = s.c.WaitWindowMs()
	}
	return s, nil
}

// wakeKeys are the KEYS of the scripts that wake waiters.
func (s *Semaphore) wakeKeys() []string {
	return []string{s.name, s.channel, s.waiters, s.clients, s.wakePrefix}
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
	ok, err := s.c.Run(ctx, trySetScript, s.wakeKeys(), []string{itoa(n), s.c.Publish(), s.c.NumSub()}).AsBool()
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
	window, wakeCh, member := s.windowMs, s.wake, ""
	if wait == 0 || window == "0" { // a single try records no waiter
		window, wakeCh = "0", ""
	} else {
		member = s.c.Record(s.c.ID(), itoa(n)) // '<client id>:<attempt>:<permits>'
	}
	keys := []string{s.name, s.waiters, s.clients}
	args := []string{itoa(n), window, member, s.c.ID(), lingerMs, "0"}
	_, err := s.c.Acquire(ctx, wait, core.Wait{
		Channel: s.channel,
		Wake:    wakeCh,
		Weight:  n,
		Policy:  wake,
		Try: func(ctx context.Context) (bool, time.Duration, error) {
			reply, notReplicated := core.SplitReplication(s.c.RunAcquire(ctx, acquireScript, keys, args))
			ok, err := reply.AsBool()
			if ok && err == nil {
				return true, 0, notReplicated // Acquire gives it back when it was not replicated
			}
			if err == nil && window != "0" {
				args[5] = "1" // the script recorded the waiter: the try that succeeds removes it
			}
			return ok, 0, err
		},
		Undo: func(ctx context.Context) { s.add(ctx, n) },
	})
	if err != nil {
		if member != "" {
			s.forget(ctx, member)
		}
		return core.Errorf(kind, s.name, err)
	}
	return nil
}

// forget removes the record of a waiter that gave up, so that no release counts it.
func (s *Semaphore) forget(ctx context.Context, member string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RetryBound)
	defer cancel()
	rdb := s.c.RDB()
	rdb.Do(ctx, rdb.B().Zrem().Key(s.waiters).Member(member).Build())
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
	err := s.c.Run(ctx, addScript, s.wakeKeys(), []string{itoa(n), s.c.Publish(), s.c.NumSub()}).Error()
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

// lingerMs: a client keeps listening on a wake channel this long after its last waiter left.
var lingerMs = itoa(pubsub.Linger.Milliseconds())
