// Package ratelimit is a distributed rate limiter, Redisson's RRateLimiter: the same keys, fields and
// grants in Redis, so Go and Java processes draw from one rate.
//
// A Limiter allows Rate permits per Interval, over a sliding window: a permit taken at time t is
// counted until t+Interval, and no window of Interval grants more than Rate permits, unless Release
// gives some back or UpdateRate with KeepState lowers the rate below what the window holds (see
// each). Acquire takes permits, waiting until the window has room. Set the rate once with
// TrySetRate (the first process to come sets it, the others find it set), replace it with SetRate, or
// change it in place with UpdateRate and KeepState. Expire, ClearExpire and TTL are Redisson's
// RExpirable methods. A semaphore bounds how many run at once; a rate limiter bounds how many start
// per interval, and the two go together (see the Example).
//
// # Waiting
//
// When the window is full, the acquiring script answers how long until the oldest grants leave it,
// and the waiter sleeps exactly that long before it tries again: no polling step, and no Pub/Sub
// (Redisson publishes nothing for a rate limiter either). A waiter that finds the permits taken by
// someone faster gets a new answer and sleeps again. Cancelling ctx ends a wait at once.
//
// # Clocks
//
// The window is kept by the Redis server's clock (TIME, read inside the script), never by the
// client's: Go processes on hosts with skewed clocks still share one exact window. Redisson's scripts
// are given the Java client's clock instead. Where Java and Go processes share a limiter, a grant made
// by a Java host whose clock is ahead of the server's by d counts for Go acquirers d longer (and one
// made by Go counts d shorter for that Java host): the rate holds within the hosts' clock skew, which
// NTP keeps to milliseconds.
//
// # Layout in Redis (Redisson's)
//
// The name is a hash: rate, interval (ms), type (0 Overall, 1 PerClient) and keepAliveTime (ms). The
// window is "{name}:value", the permits left (a string), and "{name}:permits", a sorted set of the
// grants made within the interval, each a member struct.pack('Bc0I', 16, id, permits) (a random
// 16-byte id, then the permits as a 4-byte unsigned int) scored by its time in ms. A PerClient
// limiter keeps one window per client, "{name}:value:<client id>" and "{name}:permits:<client id>".
// A name with a hash tag of its own gets ":value" and ":permits" without new braces.
package ratelimit

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/waiting"
	"github.com/redisync/redisync/lua"
)

var (
	acquireScript  = lua.Load("ratelimit_acquire.lua")
	giveBackScript = lua.Load("ratelimit_give_back.lua")
	setScript      = lua.Load("ratelimit_set.lua")
	releaseScript  = lua.Load("ratelimit_release.lua")
	expireScript   = lua.Load("ratelimit_expire.lua")
	stateScript    = lua.Load("ratelimit_state.lua")
	deleteScript   = lua.Load("ratelimit_delete.lua")
)

const kind = "rate limiter"

// Limiter is a distributed rate limiter on one name. It is cheap to create and safe for concurrent
// use; Limiter values with the same name, on any Client of the same Redis, are the same limiter.
type Limiter struct {
	c    *core.Client
	name string
	// The scripts' KEYS: the limiter, the Overall value, this client's value, the Overall permits,
	// this client's permits, the memos' prefix.
	keys [6]string
}

// Option configures a Limiter.
type Option func(*options)

type options struct{ clientID *string }

// WithClientID sets the id under which a PerClient limiter keeps this Limiter's window (default: the
// Client's ID). Limiters given the same id share one PerClient rate: several Clients of one process,
// say, or a Go process and a Redisson instance whose id it is. It does not change an Overall limiter.
func WithClientID(id string) Option { return func(o *options) { o.clientID = &id } }

// New returns the rate limiter called name. It sends nothing: set the rate with TrySetRate or SetRate.
func New(c *redisync.Client, name string, opts ...Option) (*Limiter, error) {
	cc := core.Of(c)
	name, err := cc.Name(kind, name)
	if err != nil {
		return nil, err
	}
	l := &Limiter{c: cc, name: name}
	side := cc.SideKeys(name, layout.RateLimiter.Value, layout.RateLimiter.Permits, layout.Memo)
	l.keys[0], l.keys[1], l.keys[3], l.keys[5] = name, side[0], side[1], side[2]
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	id := l.c.Values.Client
	if o.clientID != nil {
		id = *o.clientID
	}
	l.keys[2], l.keys[4] = l.clientKeys(id)
	if l.keys[2] == "" {
		return nil, errs.Invalid(kind, name, "empty client id")
	}
	return l, nil
}

// clientKeys returns the value and permits keys of a PerClient window, or "" for an empty id.
func (l *Limiter) clientKeys(id string) (value, permits string) {
	if id == "" {
		return "", ""
	}
	n := l.c.Names()
	return n.Suffixed(l.keys[1], id), n.Suffixed(l.keys[3], id)
}

// Name returns the limiter's name, which is also the key of its hash in Redis.
func (l *Limiter) Name() string { return l.name }

// Acquire takes n permits, waiting until the window has room for n at once, ctx ends (its cause is
// returned), or the Client is closed (redisync.ErrClosed). n must be at least 1 and at most the rate;
// more is an error matching redisync.ErrInvalidArgument. A limiter whose rate is not set fails with
// redisync.ErrNotInitialized, and a name that holds something else with redisync.ErrWrongType.
//
// An error never means the permits were taken, except when the connection fails while the acquiring
// script runs: the error is then the connection's, and the script may have taken them on the server.
// They leave the window after its interval, as every grant does.
func (l *Limiter) Acquire(ctx context.Context, n int64) error {
	return l.acquire(ctx, n, -1)
}

// TryAcquire is Acquire with a wait bound: it gives up with redisync.ErrNotAcquired when n permits
// are not taken within wait, and at once when the limiter answers that they will not be free before
// wait ends. With wait 0 it tries once. ctx may end the wait earlier.
func (l *Limiter) TryAcquire(ctx context.Context, n int64, wait time.Duration) error {
	if wait < 0 {
		return errs.Invalid(kind, l.name, "negative wait %v", wait)
	}
	return l.acquire(ctx, n, wait)
}

func (l *Limiter) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if ctx == nil {
		return errs.Invalid(kind, l.name, "nil context")
	}
	if n < 1 || n > math.MaxUint32 {
		return errs.Invalid(kind, l.name, "%d permits: want 1 to the rate", n)
	}
	a := &acquisition{l: l}
	a.args = [2]string{strconv.FormatInt(n, 10), member(n)}
	if wait > 0 {
		a.deadline = time.Now().Add(wait)
	}
	// No Channel: nothing announces freed permits, and each try says how long to sleep.
	_, err := l.c.Acquire(ctx, kind, l.name, wait, waiting.Wait{Tries: a})
	if err != nil {
		return errs.Errorf(kind, l.name, err)
	}
	return nil
}

// Release gives n permits back to the window at once (Redisson's release), for this Client's window
// of a PerClient limiter: the permits left grow by n, never above the rate. Nothing announces them:
// a waiter finds them at its next try. Release does not know which grants the permits were taken by:
// those stay in the window and return their permits again when they leave it, up to the rate, so
// released permits let the window grant more than Rate in an Interval (Redisson's rule). n must not
// be negative; 0 does nothing and sends nothing. It releases even when ctx has been cancelled, and
// once however often the network makes it send again. redisync.ErrNotInitialized when no rate is set
// (nothing changes).
func (l *Limiter) Release(ctx context.Context, n int64) error {
	if ctx == nil {
		return errs.Invalid(kind, l.name, "nil context")
	}
	if n < 0 {
		return errs.Invalid(kind, l.name, "%d permits: want 0 or more", n)
	}
	if n == 0 {
		return nil
	}
	rid := l.c.RequestID()
	res, err := l.c.Send(context.WithoutCancel(ctx), releaseScript, l.keys[:], []string{strconv.FormatInt(n, 10), rid}).AsIntSlice()
	if err != nil {
		return errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.keys[5] + rid)
	switch {
	case len(res) == 2 && res[0] == 1:
		return nil
	case len(res) == 1 && res[0] == -2:
		return errs.Errorf(kind, l.name, fmt.Errorf("%w: no rate is set (TrySetRate or SetRate)", errs.ErrNotInitialized))
	}
	return errs.Errorf(kind, l.name, fmt.Errorf("unexpected reply %v from the releasing script", res))
}

// acquisition is what the tries of one Acquire share.
type acquisition struct {
	l        *Limiter
	args     [2]string // the permits, and the grant's member (the same for every try: one is kept)
	deadline time.Time // TryAcquire's: zero for none
}

// Try sends one try. Its grant's member is its trace: a try sent again after a lost answer finds the
// grant the first send made (ratelimit_acquire.lua).
func (a *acquisition) Try(ctx context.Context, within send.Bounds) (bool, time.Duration, error) {
	l := a.l
	reply, notReplicated := l.c.SendAcquiring(ctx, within, acquireScript, l.keys[:5], a.args[:])
	res, err := reply.AsIntSlice()
	if err != nil {
		return false, 0, err
	}
	switch {
	case len(res) == 2 && res[0] == 1:
		return true, 0, notReplicated // Acquire gives it back when it was not replicated
	case len(res) == 2 && res[0] == 0:
		retryIn := time.Duration(res[1]) * time.Millisecond
		if !a.deadline.IsZero() && time.Until(a.deadline) < retryIn {
			return false, 0, errs.ErrNotAcquired // no try before the bound can succeed
		}
		return false, retryIn, nil
	case len(res) == 2 && res[0] == -1:
		return false, 0, fmt.Errorf("%w: %s permits: more than the rate, %d", errs.ErrInvalidArgument, a.args[0], res[1])
	case len(res) == 1 && res[0] == -2:
		return false, 0, fmt.Errorf("%w: no rate is set (TrySetRate or SetRate)", errs.ErrNotInitialized)
	}
	return false, 0, fmt.Errorf("unexpected reply %v from the acquiring script", res)
}

// Undo removes the grant of a try whose caller has gone, that the replicas did not acknowledge, or
// whose answer never came, and returns its permits to the window: the grant is found by its member,
// whether or not the try made it.
func (a *acquisition) Undo(ctx context.Context, _ bool) {
	a.l.c.Send(ctx, giveBackScript, a.l.keys[:5], []string{a.args[1], a.args[0]})
}

// member packs a grant as Redisson does, struct.pack('Bc0I', 16, id, n): the id's length, 16 random
// bytes (unique among the grants in the window, or two would be one), then n as a 4-byte unsigned
// int in the byte order of the servers Redis runs on (little-endian).
func member(n int64) string {
	var b [1 + 16 + 4]byte
	b[0] = 16
	binary.LittleEndian.PutUint64(b[1:], rand.Uint64())
	binary.LittleEndian.PutUint64(b[9:], rand.Uint64())
	binary.LittleEndian.PutUint32(b[17:], uint32(n))
	return string(b[:])
}
