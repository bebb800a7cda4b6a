// Package countdown is a distributed countdown latch, Redisson's RCountDownLatch: the same key,
// channel and messages in Redis, so Go and Java processes can count down and wait on the same latch.
//
// A latch holds a count. TrySetCount arms it, CountDown lowers it, and Await returns once it is zero.
// A latch that was never set, or was counted down to zero, or was deleted, has count zero: Redis keeps
// no key for it.
//
// Waiters are woken by a Pub/Sub message when the count reaches zero, on every Client at once. Unlike
// Redisson's, a waiter does not depend on that message alone: it checks the count again when its
// notification connection comes back after a drop, and at least once per recheck interval of its Client
// (redisync.WithRecheckInterval), so a lost message delays it by that interval at most. A check that
// Redis does not answer fails within 5 s, so a waiter learns that Redis has gone
// within those two bounds, and returns the error.
//
// Layout in Redis (Redisson's): the key is the name, a string holding the count, without expiry; the
// channel is "redisson_countdownlatch__channel__{name}", which hears "0" when the count reaches zero and
// "1" when the latch is set or deleted, for every name ("{job}:7" included) on a standalone server
// and under Sentinel. Only on a cluster, for a name with braces of its own whose Redisson channel would
// fall in another slot than the key, does the channel keep the key's slot instead: Redisson's own
// scripts fail on such a latch there (CROSSSLOT), so no Java process can share it.
package countdown

import (
	"context"
	"errors"
	"strconv"
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
	setScript    = lua.Load("countdown_set.lua")
	downScript   = lua.Load("countdown_down.lua")
	deleteScript = lua.Load("countdown_delete.lua")
	countScript  = lua.Load("countdown_count.lua")
)

const kind = "countdown latch"

// Latch is a distributed countdown latch on one name. It is cheap to create and safe for concurrent
// use; Latch values with the same name, on any Client of the same Redis, are the same latch.
type Latch struct {
	c       *core.Client
	name    string
	channel string
	memo    string // the prefix of the calls' memos (core/once.go)
}

// New returns the latch called name.
func New(c *redisync.Client, name string) (*Latch, error) {
	cc := core.Of(c)
	name, err := cc.Name(kind, name)
	if err != nil {
		return nil, err
	}
	return &Latch{c: cc, name: name, channel: channel(cc, name), memo: cc.SideKeys(name, layout.Memo)[0]}, nil
}

// channel returns Redisson's channel for the latch (layout.Latch), which keeps the name's slot on a
// cluster.
func channel(c *core.Client, name string) string {
	return c.Names().Braced(layout.Latch.Channel, name, layout.Latch.Fallback)
}

// Name returns the latch's name, which is also its key in Redis.
func (l *Latch) Name() string { return l.name }

// TrySetCount sets the count to n if the latch has none (its count is zero), and reports whether it
// did. A latch still counting down keeps its count: reuse one only after it has reached zero or after
// Delete. n must be at least 1.
func (l *Latch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, err
	}
	if n < 1 {
		return false, errs.Invalid(kind, l.name, "count %d: want at least 1", n)
	}
	rid := l.c.RequestID()
	set, err := l.c.Send(ctx, setScript, l.keys(), []string{strconv.FormatInt(n, 10), l.c.Values.Publish, rid}).AsInt64()
	if err != nil {
		return false, errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.memo + rid)
	return set == 1, nil
}

// CountDown lowers the count by one. When it reaches zero, the key is deleted and every waiter, on
// every Client, returns. Counting down a latch whose count is zero does nothing.
func (l *Latch) CountDown(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	rid := l.c.RequestID()
	if err := l.c.Send(context.WithoutCancel(ctx), downScript, l.keys(), []string{l.c.Values.Publish, rid}).Error(); err != nil {
		return errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.memo + rid)
	l.c.CountedDown(kind, l.name)
	return nil
}

// Count returns the current count: zero when the latch is not set. When Redis does not answer, it
// returns an error within 5 s whatever ctx's deadline.
func (l *Latch) Count(ctx context.Context) (int64, error) {
	if err := l.check(ctx); err != nil {
		return 0, err
	}
	n, err := l.count(ctx)
	if err != nil {
		return 0, errs.Errorf(kind, l.name, err)
	}
	return n, nil
}

func (l *Latch) count(ctx context.Context) (int64, error) {
	n, err := l.c.QueryScript(ctx, countScript, []string{l.name}, nil).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, err
}

// Delete removes the latch, so its count is zero, and reports whether it was set. Waiters re-check
// the count when it is deleted, and return unless the latch has been set again meanwhile.
func (l *Latch) Delete(ctx context.Context) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, err
	}
	rid := l.c.RequestID()
	n, err := l.c.Send(ctx, deleteScript, l.keys(), []string{l.c.Values.Publish, rid}).AsInt64()
	if err != nil {
		return false, errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.memo + rid)
	return n == 1, nil
}

// Await waits until the count is zero, ctx ends (its cause is returned), the Client is closed
// (redisync.ErrClosed), or a check of the count fails. It returns at once when the count is already
// zero, including when the latch was never set.
//
// A check that Redis does not answer fails within 5 s. A waiter checks the count at least once per
// recheck interval, so when Redis dies or stalls while Await waits, Await returns the error
// (wrapping the connection's) within the recheck interval and those 5 s.
func (l *Latch) Await(ctx context.Context) error { return l.await(ctx, -1) }

// TryAwait is Await with a wait bound (Redisson's await(timeout, unit)): it returns an error matching
// redisync.ErrNotAcquired when the count is still above zero after wait, or when a check sent at the
// end of wait is not answered in time, and nil once the count is zero. With wait 0 it checks once.
// ctx may end the wait earlier, with its cause as the error. It returns within wait and a quarter
// second whatever Redis does: a check that cannot reach Redis in that time returns the connection's
// error.
func (l *Latch) TryAwait(ctx context.Context, wait time.Duration) error {
	if wait < 0 {
		return errs.Invalid(kind, l.name, "negative wait %v", wait)
	}
	return l.await(ctx, wait)
}

func (l *Latch) await(ctx context.Context, wait time.Duration) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	var stop time.Time // a check sent at the end of the wait gets a quarter second to be answered
	if wait > 0 {
		stop = time.Now().Add(wait + send.Overtime)
	}
	_, err := l.c.Acquire(ctx, kind, l.name, wait, waiting.Wait{
		Channel: l.channel,
		Weight:  1,
		// '0' opens the latch; '1' (set again, or deleted) may have made the count zero too, and a
		// re-check costs one GET per waiter.
		Policy: pubsub.WakeAll,
		Tries:  &check{l: l, ctx: ctx, stop: stop},
	})
	if err != nil {
		return errs.Errorf(kind, l.name, err)
	}
	return nil
}

// check is Await's try: a read of the count, which takes nothing and so gives nothing back.
type check struct {
	l    *Latch
	ctx  context.Context // the caller's
	stop time.Time       // when a check sent at the end of the wait is given up (zero: never)
}

func (c *check) Try(context.Context, send.Bounds) (bool, time.Duration, error) {
	// A read needs no protection from cancellation: the caller's ctx and the wait bound it.
	ctx, rctx := c.ctx, c.ctx
	if !c.stop.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, c.stop)
		defer cancel()
	}
	n, err := c.l.count(rctx)
	switch {
	case err == nil:
		return n <= 0, 0, nil
	case ctx.Err() != nil:
		return false, 0, context.Cause(ctx)
	case rctx.Err() != nil || (!c.stop.IsZero() && errors.Is(err, context.DeadlineExceeded)):
		// Unanswered until the wait ended: not seen open. rueidis may report the deadline a moment
		// before rctx's own timer fires.
		return false, 0, nil
	}
	return false, 0, err
}

func (c *check) Undo(context.Context, bool) {}

func (l *Latch) check(ctx context.Context) error {
	if ctx == nil {
		return errs.Invalid(kind, l.name, "nil context")
	}
	return nil
}

func (l *Latch) keys() []string { return []string{l.name, l.channel, l.memo} }
