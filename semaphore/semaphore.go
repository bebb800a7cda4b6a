// Package semaphore holds distributed semaphores, Redisson's RSemaphore and RPermitExpirableSemaphore:
// the same keys, values and messages in Redis, so Go and Java processes share the permits of one name.
//
// A Semaphore counts permits: Acquire takes n of them, waiting until they are available, and Release
// gives n back. Permits have no owner, so any process may release them; one that dies holding permits
// keeps them from the pool until someone adds them back. An Expirable semaphore gives every permit an
// id and, optionally, a lease: a permit whose lease ends returns to the pool by itself, so a crashed
// worker cannot leak capacity.
//
// A Semaphore's waiter records itself beside the count, and a release hands permits over: it takes
// them for as many waiters as it can serve (one asking for 2 and one asking for 1, say, for a release
// of 3), those that tried least recently first, across all Clients, and tells each one's Client, so
// that the waiter returns without a try of its own. Redisson's message (the new count) is still
// published whenever permits are left, as Redisson publishes it on every release, so that a Java
// waiter never misses one; it wakes, on each Client, as many waiters as the count can serve, which
// then try. An Expirable semaphore's waiters are woken that
// way only.
//
// Acquiring or releasing 0 permits is a no-op that succeeds without a command to Redis, as in
// Redisson, the JDK and x/sync. A semaphore lives until Delete, or until a time to live that
// TrySetPermitsTTL or Expire gave it ends; then it is unset, as if never set. Permits acquired before
// do not follow it: ReleaseIfExists will not set the semaphore anew, and an Expirable's permits end
// with it.
//
// An Expirable's waiter that parked before a shorter lease was taken sees it at the Client's recheck
// interval at the latest (redisync.WithRecheckInterval). Its acquired permits end with the pool they
// were taken from: when the semaphore's key ends (Delete, a TTL, or any other removal), they return
// into no pool, not even one set anew under the same name, and releasing them answers
// redisync.ErrNotHeld. Acquire gives the permits the key's TTL, as Redisson does.
package semaphore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/waiting"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

var (
	acquireScript = lua.Load("semaphore_acquire.lua")
	addScript     = lua.Load("semaphore_add.lua")
	trySetScript  = lua.Load("semaphore_try_set.lua")
	forgetScript  = lua.Load("semaphore_forget.lua")
	drainScript   = lua.Load("semaphore_drain.lua")
	deleteScript  = lua.Load("semaphore_delete.lua")
	countScript   = lua.Load("semaphore_count.lua")
	expireScript  = lua.Load("semaphore_expire.lua")
)

// lingerMs: a client keeps listening on a semaphore's wake channel this long after its last waiter
// left.
var lingerMs = strconv.FormatInt(pubsub.Linger.Milliseconds(), 10)

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
	// The hand-over (semaphore_wake.lua): the scripts' KEYS (the count, the channel, waiter records,
	// clients, wake channels' prefix, grants, memos' prefix), and this client's wake channel. windowMs
	// is "0" where it is off.
	keys     [7]string
	tryKeys  [5]string // the acquire script's: the count, waiter records, clients, grants, memos' prefix
	wake     string
	windowMs string
}

// New returns the counting semaphore called name.
func New(c *redisync.Client, name string) (*Semaphore, error) {
	cc := core.Of(c)
	name, err := cc.Name(kind, name)
	if err != nil {
		return nil, err
	}
	s := &Semaphore{c: cc, name: name, channel: channel(cc, name)}
	side := cc.SideKeys(name, layout.Semaphore.Waiters, layout.Semaphore.Clients, layout.Semaphore.Wake,
		layout.Semaphore.Grants, layout.Memo)
	s.keys = [7]string{name, s.channel, side[0], side[1], side[2], side[3], side[4]}
	s.tryKeys = [5]string{name, side[0], side[1], side[3], side[4]}
	s.wake = s.keys[4] + s.c.Values.Client
	// Subscriber counts cannot be trusted on a cluster with classic Pub/Sub, and an acquisition that
	// must wait for the replicas needs a try of its own: there a release only announces the count.
	s.windowMs = s.c.Values.Window
	return s, nil
}

// channel is where every semaphore of name announces its new count.
func channel(c *core.Client, name string) string {
	return c.Names().Prefixed(layout.Semaphore.Channel, name)
}

// Name returns the semaphore's name, which is also its key in Redis.
func (s *Semaphore) Name() string { return s.name }

// TrySetPermits sets the number of available permits to n, only if the semaphore has never been set
// (its key does not exist). It reports whether it set them.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	return s.trySet(ctx, n, 0)
}

// TrySetPermitsTTL is TrySetPermits for a semaphore that lives ttl (Redisson's trySetPermits with a
// time to live): ttl after it was set, the semaphore ends with its permits, as after Delete, unless
// Expire gives it another TTL. ttl must be at least a millisecond.
func (s *Semaphore) TrySetPermitsTTL(ctx context.Context, n int64, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, errs.Errorf(kind, s.name, err)
	}
	return s.trySet(ctx, n, ttl)
}

func (s *Semaphore) trySet(ctx context.Context, n int64, ttl time.Duration) (bool, error) {
	if err := s.check(ctx, n, 0); err != nil {
		return false, err
	}
	rid := s.c.RequestID()
	args := []string{itoa(n), s.c.Values.Publish, s.c.Values.NumSub, itoa(ttl.Milliseconds()), rid}
	ok, err := s.c.Send(ctx, trySetScript, s.keys[:], args).AsBool()
	if err != nil {
		return false, errs.Errorf(kind, s.name, err)
	}
	s.c.DeleteLater(s.keys[6] + rid)
	return ok, nil
}

// AddPermits adds n permits, or removes -n when n is negative; the count may go below zero, and
// acquirers then wait until enough are released. Waiters are woken when the count allows. n == 0 is
// refused: it would only create the key, which makes TrySetPermits fail.
func (s *Semaphore) AddPermits(ctx context.Context, n int64) error {
	if ctx == nil {
		return errs.Invalid(kind, s.name, "nil context")
	}
	if n == 0 {
		return errs.Invalid(kind, s.name, "adding 0 permits")
	}
	return s.add(ctx, n)
}

// Acquire takes n permits, waiting until n are available at once, ctx ends, or the Client is closed.
// Acquiring 0 permits takes nothing and sends nothing: it returns nil, or ctx's cause when ctx has
// ended (as golang.org/x/sync/semaphore does).
//
// An error never means the permits were taken, with one exception that no client can rule out: when
// the connection fails while the acquiring script runs, the error is the connection's, and the script
// may have taken the permits on the server. The same holds for permits a release took for a waiter
// that then gave up, if its Client cannot reach Redis for the 30 s during which its leave, which
// gives them back, is sent again. Nobody then holds them; AddPermits can put them back.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	return s.acquire(ctx, n, -1)
}

// TryAcquire is Acquire with a wait bound: it gives up with redisync.ErrNotAcquired when n permits are
// not taken within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64, wait time.Duration) error {
	if wait < 0 {
		return errs.Invalid(kind, s.name, "negative wait %v", wait)
	}
	return s.acquire(ctx, n, wait)
}

func (s *Semaphore) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if err := s.check(ctx, n, 0); err != nil {
		return err
	}
	if n == 0 {
		if err := context.Cause(ctx); err != nil {
			return errs.Errorf(kind, s.name, err)
		}
		return nil
	}
	a := &acquisition{s: s, n: n}
	// Tries record nothing until the wait starts to listen (Tag): an Acquire that succeeds at its
	// first try, the usual case, sends and builds no record.
	a.args = [nArgs]string{argPermits: itoa(n), argWindow: "0", argClient: s.c.Values.Client, argLinger: lingerMs,
		argRid: s.c.RequestID()}
	w := waiting.Wait{Channel: s.channel, Weight: n, Policy: wake, Tries: a, Again: a}
	if wait != 0 && s.windowMs != "0" { // a single try records no waiter
		w.Wake, w.Grants = s.wake, a
	}
	if _, err := s.c.Acquire(ctx, kind, s.name, wait, w); err != nil {
		if member, rid := a.args[argRecord], a.args[argRid]; member != "" {
			s.forget(send.Overtime, member, rid)
		}
		return errs.Errorf(kind, s.name, err)
	}
	s.c.DeleteLater(s.keys[6] + a.args[argRid]) // the try's memo
	return nil
}

// The acquire script's ARGV (semaphore_acquire.lua).
const (
	argPermits = iota
	argWindow  // ms within which the waiter tries again; "0": it does not wait, and is not recorded
	argRecord  // the waiter's record, once it listens
	argClient  // this client's id, for the clients' record
	argLinger  // ms the client listens after its last waiter left
	argRid     // the acquisition's request id: a try that takes the permits keeps a memo under it
	nArgs
)

// acquisition is what the tries of one Acquire share, in one allocation.
type acquisition struct {
	s     *Semaphore
	n     int64
	args  [nArgs]string
	score int64 // the score the last failed try gave the record: a grant must have come after it
}

// Try sends one try.
func (a *acquisition) Try(ctx context.Context, within send.Bounds) (bool, time.Duration, error) {
	s := a.s
	reply, notReplicated := s.c.SendAcquiring(ctx, within, acquireScript, s.tryKeys[:], a.args[:])
	res, err := reply.AsIntSlice()
	if err != nil {
		return false, 0, err
	}
	if res[0] == 1 {
		return true, 0, notReplicated // Acquire gives it back when it was not replicated
	}
	if len(res) > 1 {
		a.score = res[1] // a hand-over must come after this try
	}
	return false, 0, nil
}

// Undo gives back the permits a try took, or may have taken (its answer never came): as a release
// that only a semaphore that still exists takes, only if the try's memo says it took them, and once.
// A try known to have taken them is given back before Undo returns when Redis answers in time, and
// otherwise, as an unanswered one always is, in the background for up to 30 s (core.Client.Undo).
func (a *acquisition) Undo(ctx context.Context, sure bool) {
	s := a.s
	memo := s.keys[6] + a.args[argRid]
	args := []string{itoa(a.n), s.c.Values.Publish, s.c.Values.NumSub, "1", a.args[argRid]}
	if sure && s.c.Send(context.WithoutCancel(ctx), addScript.Undo(), s.keys[:], args).Error() == nil {
		s.c.DeleteLater(memo)
		return
	}
	s.c.Undo(addScript, s.keys[:], args, func() { s.c.DeleteLater(memo) })
}

// Again makes the next try a call of its own, under a new request id: the one before was given back
// (the replicas lagged), and its memo says 'undone'.
func (a *acquisition) Again() { a.args[argRid] = a.s.c.RequestID() }

// Tag names the waiter's record (semaphore_wake.lua), unique to this acquisition, and makes the
// tries from now on leave it.
func (a *acquisition) Tag() string {
	if a.args[argRecord] == "" {
		// Permits handed to a waiter would not wait for the replicas, as its own try does: then
		// the waiter leaves no record, and is only woken.
		if !a.s.c.AcksReplicas(a.s.name) {
			a.args[argWindow] = a.s.windowMs
		}
		a.args[argRecord] = a.s.c.RequestID() + ":" + a.args[argPermits] // "<client id>:<attempt>:<permits>"
	}
	return a.args[argRecord]
}

// Claim takes the permits that a release took for this waiter, if it did so for the record its last
// try left, and has the grant deleted, which only a later try or a give-back would read: soon,
// batched with other deletes of the Client, and off the waiter's path.
func (a *acquisition) Claim(_, score int64) bool {
	if score != a.score {
		return false
	}
	a.s.c.DeleteLater(a.s.keys[5], a.args[argRecord])
	return true
}

// Stray gives back permits that a release took for a waiter of this client that is no longer there.
func (a *acquisition) Stray(member, _ string) { a.s.forget(0, member, "") }

// forget removes the record of a waiter that gave up, so that no release counts it, and gives back
// permits a release took for it meanwhile; rid, when not "", is the waiter's acquisition, whose tries
// still on their way then record nothing (semaphore_forget.lua). It is sent in the background until
// Redis has run it (core.Client.CleanUp), and waited for up to wait: permits handed to a waiter that
// is gone come back once it lands.
func (s *Semaphore) forget(wait time.Duration, member, rid string) {
	s.c.CleanUp(wait, forgetScript, s.keys[:], []string{member, s.c.Values.Publish, s.c.Values.NumSub, rid}, nil)
}

// Release gives back n permits and hands them to as many waiters as they can serve (see the package
// doc). Nothing checks that they were acquired. It releases even when ctx has been cancelled.
// Releasing 0 permits does nothing and sends nothing.
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if err := s.check(ctx, n, 0); err != nil || n == 0 {
		return err
	}
	return s.add(context.WithoutCancel(ctx), n)
}

// ReleaseIfExists is Release, only if the semaphore exists (Redisson's releaseIfExists): after
// Delete, or once a TTL ended it, permits acquired before do not set it anew. It reports whether it
// released; releasing 0 permits sends nothing and reports false, as in Redisson.
func (s *Semaphore) ReleaseIfExists(ctx context.Context, n int64) (bool, error) {
	if err := s.check(ctx, n, 0); err != nil || n == 0 {
		return false, err
	}
	return s.release(context.WithoutCancel(ctx), n, true)
}

func (s *Semaphore) add(ctx context.Context, n int64) error {
	_, err := s.release(ctx, n, false)
	return err
}

// release adds n permits, only to a semaphore that exists when ifExists is set (it reports whether
// it added them). Permits an acquisition gives back go that way: if the semaphore they were taken
// from has ended since, they do not set it anew.
func (s *Semaphore) release(ctx context.Context, n int64, ifExists bool) (bool, error) {
	flag := "0"
	if ifExists {
		flag = "1"
	}
	rid := s.c.RequestID()
	err := s.c.Send(context.WithoutCancel(ctx), addScript, s.keys[:], []string{itoa(n), s.c.Values.Publish, s.c.Values.NumSub, flag, rid}).Error()
	if err == nil || rueidis.IsRedisNil(err) {
		s.c.DeleteLater(s.keys[6] + rid)
	}
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	if err != nil {
		return false, errs.Errorf(kind, s.name, err)
	}
	return true, nil
}

// Delete removes the semaphore, so that it has no permits and may be set again, with what this
// package keeps beside it in Redis (waiter records, grants), and reports whether it existed. As in
// Redisson, nobody is told: waiters go on waiting for permits. Permits acquired before are not
// tracked: a Release adds them to a new count (ReleaseIfExists does not).
func (s *Semaphore) Delete(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(kind, s.name, "nil context")
	}
	rid := s.c.RequestID()
	ok, err := s.c.Send(ctx, deleteScript, s.keys[:], []string{rid}).AsBool()
	if err != nil {
		return false, errs.Errorf(kind, s.name, err)
	}
	s.c.DeleteLater(s.keys[6] + rid)
	return ok, nil
}

// Expire makes the semaphore end ttl from now, as Delete would end it, and reports whether it exists
// (a semaphore that was never set has nothing to expire). ttl must be at least a millisecond.
func (s *Semaphore) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(kind, s.name, "nil context")
	}
	if err := checkTTL(ttl); err != nil {
		return false, errs.Errorf(kind, s.name, err)
	}
	ok, err := s.c.Send(ctx, expireScript, []string{s.name}, []string{itoa(ttl.Milliseconds())}).AsBool()
	if err != nil {
		return false, errs.Errorf(kind, s.name, err)
	}
	return ok, nil
}

// checkTTL refuses a time to live that Redis would not keep: below its millisecond resolution, or
// none (PEXPIRE would delete the key at once).
func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: time to live %v: want at least 1ms", errs.ErrInvalidArgument, ttl)
	}
	return nil
}

// Available returns the number of permits available now; it is negative after AddPermits removed
// more than were available.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	if ctx == nil {
		return 0, errs.Invalid(kind, s.name, "nil context")
	}
	n, err := s.c.QueryScript(ctx, countScript, []string{s.name}, nil).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		return 0, errs.Errorf(kind, s.name, err)
	}
	return n, nil
}

// Drain takes every available permit and returns how many there were (0 when the semaphore was never
// set, which then stays unset). As in Redisson, the count is 0 afterwards even when it was negative:
// the negative count is what Drain returns.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	if ctx == nil {
		return 0, errs.Invalid(kind, s.name, "nil context")
	}
	rid := s.c.RequestID()
	n, err := s.c.Send(ctx, drainScript, []string{s.name, s.keys[6]}, []string{rid}).AsInt64()
	if err != nil {
		return 0, errs.Errorf(kind, s.name, err)
	}
	s.c.DeleteLater(s.keys[6] + rid)
	return n, nil
}

// Do runs fn while holding n permits: it acquires them (waiting as Acquire does), runs fn with ctx,
// and releases them, also when fn fails, and when fn panics: the permits are back before the panic
// goes on.
func (s *Semaphore) Do(ctx context.Context, n int64, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, func(ctx context.Context) (context.Context, error) { return ctx, s.Acquire(ctx, n) },
		func(ctx context.Context) error { return s.Release(ctx, n) }, fn)
}

// check refuses a nil ctx and a permit count below least, and every call once the Client is closed
// (those that would send nothing too).
func (s *Semaphore) check(ctx context.Context, n, least int64) error {
	if ctx == nil {
		return errs.Invalid(kind, s.name, "nil context")
	}
	if n < least {
		return errs.Invalid(kind, s.name, "%d permits: want at least %d", n, least)
	}
	if err := s.c.Closed(); err != nil {
		return errs.Errorf(kind, s.name, err)
	}
	return nil
}

// wake is the notifier's policy for semaphore channels: the message is the new number of available
// permits, which is how much waiting weight it may wake. A hand-over wakes only its own waiter; any
// other message that is not a number (no process of ours or Redisson's sends one) wakes everybody to
// look for themselves.
func wake(message string) int64 {
	if strings.HasPrefix(message, "@") {
		return 0
	}
	n, err := strconv.ParseInt(message, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
