package semaphore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/waiting"
	"github.com/redisync/redisync/lua"
)

var expirableScript = lua.Load("semaphore_expirable.lua")

const expirableKind = "expirable semaphore"

// MaxAcquire is the most permits one Acquire of an Expirable may take: every permit is a member of a
// sorted set, all sent in one script call.
const MaxAcquire = 1 << 16

// Expirable is a distributed permit-expirable semaphore on one name (Redisson's
// RPermitExpirableSemaphore). Every acquired permit has an id and, with WithLease, a lease: a permit
// whose lease ends goes back to the pool by itself, so a process that dies holding permits gives them
// back within the lease. It is cheap to create and safe for concurrent use.
//
// The semaphore has a number of permits in all (Permits): those available plus those acquired.
// Expiry is checked by every operation, by the server's clock: a permit whose lease has ended counts
// as available from then on, whoever asks, and the operation that finds it announces it to waiters.
// A waiter tries again when permits are released, and when the earliest lease it was told of ends.
// Acquired permits end with the pool they were taken from (see the package doc).
type Expirable struct {
	c       *core.Client
	name    string
	lease   time.Duration
	leaseMs string
	keys    []string
}

// Option configures an Expirable.
type Option func(*expirableOptions)

type expirableOptions struct{ lease time.Duration }

// WithLease gives every permit that Acquire takes a lease of d: unless released or given a new lease
// before, it returns to the pool d after it was taken. Without it (or with 0) permits never expire and
// must be released. AcquireFor and TryAcquireFor give a lease of their own instead.
func WithLease(d time.Duration) Option { return func(o *expirableOptions) { o.lease = d } }

// NewExpirable returns the permit-expirable semaphore called name.
func NewExpirable(c *redisync.Client, name string, opts ...Option) (*Expirable, error) {
	cc := core.Of(c)
	name, err := cc.Name(expirableKind, name)
	if err != nil {
		return nil, err
	}
	var o expirableOptions
	for _, opt := range opts {
		opt(&o)
	}
	e := &Expirable{c: cc, name: name, lease: o.lease}
	ms, err := leaseMs(e.lease)
	if err != nil {
		return nil, errs.Errorf(expirableKind, name, err)
	}
	e.leaseMs = ms
	side := cc.SideKeys(name, layout.Expirable.Permits, layout.Memo)
	e.keys = []string{name, side[0], channel(cc, name), side[1]}
	return e, nil
}

// leaseMs checks a lease and turns it into the scripts' milliseconds ("0": never expires).
func leaseMs(d time.Duration) (string, error) {
	if d < 0 {
		return "", fmt.Errorf("%w: negative lease %v", errs.ErrInvalidArgument, d)
	}
	if d > 0 && d < time.Millisecond {
		return "", fmt.Errorf("%w: lease %v is below Redis's millisecond resolution", errs.ErrInvalidArgument, d)
	}
	return strconv.FormatInt(d.Milliseconds(), 10), nil
}

// Name returns the semaphore's name, which is also the key of its available count in Redis.
func (e *Expirable) Name() string { return e.name }

// Acquire takes n permits, waiting until n are available at once, ctx ends, or the Client is closed,
// and returns their ids. While it waits it tries again when a permit is released or its lease ends.
//
// When the semaphore has been set and has fewer than n permits in all, it returns an error matching
// redisync.ErrInvalidArgument instead of waiting for permits that do not exist. Acquiring 0 permits
// takes nothing and sends nothing: it returns no ids, or ctx's cause when ctx has ended.
func (e *Expirable) Acquire(ctx context.Context, n int64) ([]string, error) {
	return e.acquire(ctx, n, -1, e.leaseMs)
}

// TryAcquire is Acquire with a wait bound: it gives up with redisync.ErrNotAcquired when n permits are
// not taken within wait; with wait 0 it tries once and does not wait. ctx may end the wait earlier.
func (e *Expirable) TryAcquire(ctx context.Context, n int64, wait time.Duration) ([]string, error) {
	if wait < 0 {
		return nil, errs.Invalid(expirableKind, e.name, "negative wait %v", wait)
	}
	return e.acquire(ctx, n, wait, e.leaseMs)
}

// AcquireFor is Acquire with a lease of its own for the permits it takes (Redisson's acquire(permits,
// leaseTime, unit)): they return to the pool lease after they were taken, whatever WithLease says;
// 0 means they never expire.
func (e *Expirable) AcquireFor(ctx context.Context, n int64, lease time.Duration) ([]string, error) {
	ms, err := leaseMs(lease)
	if err != nil {
		return nil, errs.Errorf(expirableKind, e.name, err)
	}
	return e.acquire(ctx, n, -1, ms)
}

// TryAcquireFor is TryAcquire with a lease of its own for the permits it takes (Redisson's
// tryAcquire(permits, waitTime, leaseTime, unit)): see AcquireFor.
func (e *Expirable) TryAcquireFor(ctx context.Context, n int64, wait, lease time.Duration) ([]string, error) {
	if wait < 0 {
		return nil, errs.Invalid(expirableKind, e.name, "negative wait %v", wait)
	}
	ms, err := leaseMs(lease)
	if err != nil {
		return nil, errs.Errorf(expirableKind, e.name, err)
	}
	return e.acquire(ctx, n, wait, ms)
}

// acquire takes n permits with a lease of leaseMs, waiting at most wait (< 0: without bound).
func (e *Expirable) acquire(ctx context.Context, n int64, wait time.Duration, leaseMs string) ([]string, error) {
	if ctx == nil {
		return nil, errs.Invalid(expirableKind, e.name, "nil context")
	}
	if n < 0 || n > MaxAcquire {
		return nil, errs.Invalid(expirableKind, e.name, "%d permits: want 0 to %d", n, MaxAcquire)
	}
	if n == 0 {
		err := context.Cause(ctx)
		if err == nil {
			err = e.c.Closed()
		}
		if err != nil {
			return nil, errs.Errorf(expirableKind, e.name, err)
		}
		return []string{}, nil
	}
	a := &expirableAcquisition{e: e, n: n}
	ids := make([]string, n)
	raw := make([]byte, 16*n)
	rand.Read(raw)
	for i := range ids {
		ids[i] = string(raw[16*i : 16*(i+1)])
	}
	a.args = append([]string{"acquire", e.c.Values.Publish, e.c.RequestID(), leaseMs}, ids...)
	if _, err := e.c.Acquire(ctx, expirableKind, e.name, wait, waiting.Wait{Channel: e.keys[2], Weight: n, Policy: wake, Tries: a}); err != nil {
		return nil, errs.Errorf(expirableKind, e.name, err)
	}
	for i, id := range ids {
		ids[i] = hex.EncodeToString([]byte(id))
	}
	return ids, nil
}

// expirableAcquisition is what the tries of one Acquire share. Its permit ids are its trace: a try
// sent again after a lost answer finds them taken, and Undo gives back exactly them.
type expirableAcquisition struct {
	e    *Expirable
	n    int64
	args []string
}

// Try sends one try.
func (a *expirableAcquisition) Try(ctx context.Context, within send.Bounds) (bool, time.Duration, error) {
	reply, notReplicated := a.e.c.SendAcquiring(ctx, within, expirableScript, a.e.keys, a.args)
	res, err := reply.AsIntSlice()
	if err != nil {
		return false, 0, err
	}
	switch res[0] {
	case 1:
		return true, 0, notReplicated // Acquire gives it back when it was not replicated
	case 2:
		return false, 0, fmt.Errorf("%w: %d permits asked for, the semaphore has %d in all", errs.ErrInvalidArgument, a.n, res[1])
	}
	// Wait at most until the earliest lease ends; a millisecond more, so that it has.
	return false, retryIn(res[1]), nil
}

// Undo gives back the permits a try took: permit ids are unique, so giving them back is safe whether
// or not they were taken.
func (a *expirableAcquisition) Undo(ctx context.Context, _ bool) { a.e.release(ctx, a.args[4:]) }

// Do runs fn holding n permits: it acquires them (waiting as Acquire does), runs fn, and releases
// them. With a lease (WithLease), fn's ctx ends when the permits' lease may have ended (less 1% +
// 2 ms for clock drift), with redisync.ErrLost as its cause, and Do then returns fn's error joined
// with the loss; the permits are back in the pool by then. When fn panics, the permits are released
// before the panic goes on to the caller.
func (e *Expirable) Do(ctx context.Context, n int64, fn func(ctx context.Context) error) error {
	var ids []string
	stop := context.CancelFunc(func() {})
	acquire := func(ctx context.Context) (context.Context, error) {
		start := time.Now()
		var err error
		if ids, err = e.Acquire(ctx, n); err != nil || e.lease == 0 {
			return ctx, err
		}
		lost := errs.Errorf(expirableKind, e.name, fmt.Errorf("%w: lease of %v ended", errs.ErrLost, e.lease))
		ctx, stop = context.WithDeadlineCause(ctx, start.Add(e.lease-hold.Drift(e.lease)), lost)
		return ctx, nil
	}
	release := func(held context.Context) error {
		lost := errors.Is(context.Cause(held), errs.ErrLost)
		stop()
		err := e.Release(held, ids...)
		if lost && errors.Is(err, errs.ErrNotHeld) {
			return nil // back in the pool already: Do returns the loss
		}
		return err
	}
	return core.Locked(ctx, acquire, release, fn)
}

// Release gives back the permits with the given ids, all of them or, when one of them is not
// acquired (its lease ended, it was released, or it never existed), none: the error then matches
// redisync.ErrNotHeld and says which. It releases even when ctx has been cancelled. Releasing no ids
// does nothing and sends nothing.
func (e *Expirable) Release(ctx context.Context, ids ...string) error {
	if ctx == nil {
		return errs.Invalid(expirableKind, e.name, "nil context")
	}
	if len(ids) == 0 {
		if err := e.c.Closed(); err != nil {
			return errs.Errorf(expirableKind, e.name, err)
		}
		return nil
	}
	raw := make([]string, len(ids))
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		r, err := decodeID(id)
		if err != nil {
			return errs.Errorf(expirableKind, e.name, err)
		}
		if seen[r] {
			return errs.Invalid(expirableKind, e.name, "permit %s listed twice", id)
		}
		seen[r] = true
		raw[i] = r
	}
	bad, err := e.release(context.WithoutCancel(ctx), raw)
	if err != nil {
		return errs.Errorf(expirableKind, e.name, err)
	}
	if bad > 0 {
		return errs.Errorf(expirableKind, e.name, fmt.Errorf("%w: permit %s is not acquired (expired, released or unknown)", errs.ErrNotHeld, ids[bad-1]))
	}
	return nil
}

// TryRelease is Release that reports, instead of an error, whether it released (Redisson's
// tryRelease): false, releasing none, when one of the ids is not acquired. Releasing no ids sends
// nothing and reports true.
func (e *Expirable) TryRelease(ctx context.Context, ids ...string) (bool, error) {
	err := e.Release(ctx, ids...)
	if errors.Is(err, errs.ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// release runs the release of raw ids; it returns the 1-based position of an id that is not
// acquired, or 0 when every id was released.
func (e *Expirable) release(ctx context.Context, raw []string) (int64, error) {
	args := append([]string{"release", e.c.Values.Publish, e.c.RequestID()}, raw...)
	res, err := e.c.Send(context.WithoutCancel(ctx), expirableScript, e.keys, args).AsIntSlice()
	if err != nil {
		return 0, err
	}
	if res[0] == 0 {
		return res[1], nil
	}
	return 0, nil
}

// UpdateLease gives the permit id a new lease of d from now; 0 means it never expires. It returns an
// error matching redisync.ErrNotHeld when the permit is not acquired (its lease ended already, it was
// released, or it never existed).
func (e *Expirable) UpdateLease(ctx context.Context, id string, d time.Duration) error {
	if ctx == nil {
		return errs.Invalid(expirableKind, e.name, "nil context")
	}
	if err := e.updateLease(ctx, id, d); err != nil {
		return errs.Errorf(expirableKind, e.name, err)
	}
	return nil
}

func (e *Expirable) updateLease(ctx context.Context, id string, d time.Duration) error {
	raw, err := decodeID(id)
	if err != nil {
		return err
	}
	ms, err := leaseMs(d)
	if err != nil {
		return err
	}
	reply, notReplicated := e.c.SendAcquiring(ctx, send.Bounds{}, expirableScript, e.keys, []string{"lease", e.c.Values.Publish, "", ms, raw})
	if notReplicated != nil {
		return notReplicated // the lease stands, but a failover could lose the new one
	}
	ok, err := reply.AsBool()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: permit %s is not acquired (expired, released or unknown)", errs.ErrNotHeld, id)
	}
	return nil
}

// LeaseLeft returns how long the permit id has before its lease ends and it returns to the pool, or
// -1 when it never expires (Redisson's getLeaseTime). It returns an error matching
// redisync.ErrNotHeld when the permit is not acquired (its lease ended, it was released, or it never
// existed).
func (e *Expirable) LeaseLeft(ctx context.Context, id string) (time.Duration, error) {
	if ctx == nil {
		return 0, errs.Invalid(expirableKind, e.name, "nil context")
	}
	raw, err := decodeID(id)
	if err != nil {
		return 0, errs.Errorf(expirableKind, e.name, err)
	}
	ms, err := e.c.Send(ctx, expirableScript, e.keys, []string{"left", e.c.Values.Publish, "", raw}).AsInt64()
	switch {
	case err != nil:
		return 0, errs.Errorf(expirableKind, e.name, err)
	case ms == -2:
		return 0, errs.Errorf(expirableKind, e.name, fmt.Errorf("%w: permit %s is not acquired (expired, released or unknown)", errs.ErrNotHeld, id))
	case ms < 0:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// decodeID turns a permit id as users see it (32 hex digits) into the 16 bytes stored in Redis.
func decodeID(id string) (string, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		return "", fmt.Errorf("%w: permit id %q: want 32 hex digits", errs.ErrInvalidArgument, id)
	}
	return string(b), nil
}

// Available returns the number of permits available now (negative after AddPermits or SetPermits
// removed more than were available).
func (e *Expirable) Available(ctx context.Context) (int64, error) {
	avail, _, err := e.count(ctx)
	return avail, err
}

// Acquired returns the number of permits acquired and not yet released or expired.
func (e *Expirable) Acquired(ctx context.Context) (int64, error) {
	_, acquired, err := e.count(ctx)
	return acquired, err
}

// Permits returns the number of permits in all: available plus acquired.
func (e *Expirable) Permits(ctx context.Context) (int64, error) {
	avail, acquired, err := e.count(ctx)
	return avail + acquired, err
}

func (e *Expirable) count(ctx context.Context) (avail, acquired int64, err error) {
	if ctx == nil {
		return 0, 0, errs.Invalid(expirableKind, e.name, "nil context")
	}
	res, err := e.c.Send(ctx, expirableScript, e.keys, []string{"count", e.c.Values.Publish, ""}).AsIntSlice()
	if err != nil {
		return 0, 0, errs.Errorf(expirableKind, e.name, err)
	}
	return res[0], res[1], nil
}

// SetPermits makes n the number of permits in all: the available ones become n minus those acquired,
// which may be negative until enough are released. Waiters are woken when the count allows.
func (e *Expirable) SetPermits(ctx context.Context, n int64) error {
	if n < 0 {
		return errs.Invalid(expirableKind, e.name, "negative permits %d", n)
	}
	_, err := e.adjust(ctx, "set", n)
	return err
}

// TrySetPermits sets the number of available permits to n, only if the semaphore is not set: it never
// was, or it was deleted or its TTL ended. It reports whether it set them.
func (e *Expirable) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if n < 0 {
		return false, errs.Invalid(expirableKind, e.name, "negative permits %d", n)
	}
	ok, err := e.adjust(ctx, "tryset", n)
	return ok == 1, err
}

// AddPermits adds n permits, or removes -n when n is negative; the available count may go below zero.
// n == 0 is refused: it would only create the key, which makes TrySetPermits fail.
func (e *Expirable) AddPermits(ctx context.Context, n int64) error {
	if n == 0 {
		return errs.Invalid(expirableKind, e.name, "adding 0 permits")
	}
	_, err := e.adjust(ctx, "add", n)
	return err
}

func (e *Expirable) adjust(ctx context.Context, op string, n int64) (int64, error) {
	if ctx == nil {
		return 0, errs.Invalid(expirableKind, e.name, "nil context")
	}
	rid := e.c.RequestID()
	res, err := e.c.Send(ctx, expirableScript, e.keys, []string{op, e.c.Values.Publish, rid, itoa(n)}).AsInt64()
	if err != nil {
		return 0, errs.Errorf(expirableKind, e.name, err)
	}
	e.c.DeleteLater(e.keys[3] + rid)
	return res, nil
}

// Delete removes the semaphore with its acquired permits (Redisson deletes both keys), so that it
// has no permits and may be set again, and reports whether it existed. The permits acquired before
// end with it: releasing them answers redisync.ErrNotHeld. As in Redisson, nobody is told.
func (e *Expirable) Delete(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(expirableKind, e.name, "nil context")
	}
	rid := e.c.RequestID()
	n, err := e.c.Send(ctx, expirableScript, e.keys, []string{"delete", e.c.Values.Publish, rid}).AsInt64()
	if err != nil {
		return false, errs.Errorf(expirableKind, e.name, err)
	}
	e.c.DeleteLater(e.keys[3] + rid)
	return n > 0, nil
}

// Expire makes the semaphore, with its acquired permits, end ttl from now, as Delete would end it,
// and reports whether it exists. ttl must be at least a millisecond. Permits acquired later take the
// TTL that is left.
func (e *Expirable) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(expirableKind, e.name, "nil context")
	}
	if err := checkTTL(ttl); err != nil {
		return false, errs.Errorf(expirableKind, e.name, err)
	}
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	ok, err := e.c.Send(ctx, expirableScript, e.keys, []string{"expire", e.c.Values.Publish, "", ms}).AsBool()
	if err != nil {
		return false, errs.Errorf(expirableKind, e.name, err)
	}
	return ok, nil
}

// retryIn turns the time until the earliest lease ends, as the script reports it, into a wait: a
// millisecond more, so that it has ended; none (-1) is unknown.
func retryIn(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms+1) * time.Millisecond
}
