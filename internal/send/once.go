package send

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/lua"
)

// Sending scripts exactly once.
//
// When the connection fails while a script is on its way, nobody can tell whether Redis ran it: the
// request, the answer, or both may have been lost. Such a script is sent again, as its Resent
// variant (lua.Script.Resent) with the same keys and arguments, until Redis answers. Every script
// that changes state is written so that its Resent variant acts only if the first send did not, and
// otherwise answers what the first send did: it finds the first send's trace (the hold count the
// client expected, a permit's or a grant's id, or the answer kept under the call's request id, the
// memo). A memo lives for lua.MemoTTL at most and is deleted once its answer is in.
//
// Redis may also refuse a script without running it (see isRefused): while its slot moves between
// cluster masters (TRYAGAIN), while the cluster is down or the server loads its data, or on a node
// that is no longer a master. Such a script is sent again as it was, after a pause, since it did not
// run; only a send that might have run makes the next one its Resent variant. A call that Redis keeps
// refusing until its bound returns the refusal, which then means that it did not run at all, or the
// last connection failure when one came between, which means that it may have.
//
// Every other error is an answer and ends the call at once: Redis's own (WRONGTYPE, NOPERM), the
// scripts' refusals and the library's errors.

// RetryBound limits how long a call is sent again after connection failures or refusals, whatever
// ctx's deadline: a call on a dead server returns its error within it, and one on a slot that moves
// rides through a move that takes less (a slot of a few keys moves in milliseconds).
const RetryBound = 5 * time.Second

// Overtime is how long past the end of a wait a call waits for the answer to what it sent at that
// end: the last try of a wait bound, a waiter's leaving (see CleanUp). A server that answers does so
// well within it; one that stalls, or has gone, holds the caller no longer, and the command finishes
// or fails on its own, giving back what it acquired.
const Overtime = 250 * time.Millisecond

// undoBound is how long a clean-up keeps being sent (a give-back of what a try took, a waiter's
// leaving): within the life of a memo (lua.MemoTTL), so that a give-back still finds what it undoes,
// and longer than any call waits, so that a move or a failover that outlasted the call does not leave
// its clean-up undone.
const undoBound = 30 * time.Second

// ResendBackoff is the longest pause between two sends of a call whose connection keeps failing or
// that Redis keeps refusing; refusedPause the first pause after a refusal, which Redis answers at once.
const (
	ResendBackoff = 250 * time.Millisecond
	refusedPause  = 10 * time.Millisecond
)

// Send sends the script s that changes state, and returns Redis's answer. A connection failure makes
// it send s.Resent() again, and a refusal s as it was, within RetryBound. When ctx can end, Send
// returns at its end and the call goes on in the background until answered or the bound passes: it
// takes effect once or not at all, never twice.
func (c *Sender) Send(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	return c.sendAway(ctx, Bounds{}, s, keys, args, false)
}

// SendAcquiring is Send for a script that takes or extends a hold (an acquisition, a renewal, a
// fencing increment), sent again within b (a try within its wait's bounds; zero: RetryBound alone):
// with replica acknowledgement on, WAIT follows it (see replicas.go), and ends within b.Refused.
// notReplicated matches ErrNotReplicated when too few replicas acknowledged it: reply is still the
// script's, and what it acquired must be given back.
func (c *Sender) SendAcquiring(ctx context.Context, b Bounds, s *lua.Script, keys, args []string) (reply rueidis.RedisResult, notReplicated error) {
	return splitReplication(c.sendAway(ctx, b, s, keys, args, true))
}

// Bounds say until when a call is sent again after a connection failure (Lost) and after a
// refusal (Refused); zero for no bound but RetryBound. A WAIT for the replicas ends within Refused
// too (a wait's end or ctx's deadline), not within Lost: a single try's WAIT takes the replicas'
// whole timeout, as a try without a bound does.
type Bounds struct{ Lost, Refused time.Time }

func (c *Sender) sendAway(ctx context.Context, b Bounds, s *lua.Script, keys, args []string, acquires bool) rueidis.RedisResult {
	if c.isClosed() {
		return rueidis.NewErrorResult(errs.ErrClosed)
	}
	if ctx.Done() == nil {
		return c.closing(c.send(ctx, b, s, keys, args, acquires, RetryBound))
	}
	// The call may outlive this one: it gets copies, so that callers may pass buffers of their own.
	k, a := slices.Clone(keys), slices.Clone(args)
	done := make(chan rueidis.RedisResult, 1)
	if !c.background(func() { done <- c.send(context.WithoutCancel(ctx), b, s, k, a, acquires, RetryBound) }) {
		return rueidis.NewErrorResult(errs.ErrClosed)
	}
	select {
	case res := <-done:
		return c.closing(res)
	case <-ctx.Done():
		return rueidis.NewErrorResult(context.Cause(ctx))
	}
}

// closing returns ErrClosed for a call whose connection failed because Close closed it.
func (c *Sender) closing(res rueidis.RedisResult) rueidis.RedisResult {
	if err := res.Error(); err != nil && IsConnectionError(err) && c.isClosed() {
		return rueidis.NewErrorResult(errs.ErrClosed)
	}
	return res
}

// Resend is Send on ctx, which must not end before the call does, sent again after connection
// failures and refusals for up to bound: the watchdog's renewals, which a restart must not cost a
// round. acquires: replicas acknowledge it, as SendAcquiring's.
func (c *Sender) Resend(ctx context.Context, s *lua.Script, keys, args []string, acquires bool, bound time.Duration) rueidis.RedisResult {
	return c.send(ctx, Bounds{}, s, keys, args, acquires, bound)
}

// send runs the call on ctx, which must not end before the call does, sending it again after
// connection failures and refusals for up to bound, and within b.
func (c *Sender) send(ctx context.Context, b Bounds, s *lua.Script, keys, args []string, acquires bool, bound time.Duration) rueidis.RedisResult {
	res := c.exec(ctx, b, s, keys, args, acquires)
	lost := IsConnectionError(res.Error())
	if !lost && !IsRefused(res.Error()) {
		return res
	}
	deadline := time.Now().Add(bound)
	var unanswered rueidis.RedisResult // the last send that may have run, if any
	mayHaveRun := false
	next := s
	pause := time.Duration(0) // the first send after a connection failure goes at once: rueidis dials anew
	for {
		by, within := deadline, b.Refused
		if lost {
			unanswered, mayHaveRun, next, within = res, true, s.Resent(), b.Lost
		} else {
			pause = max(pause, refusedPause)
		}
		if !within.IsZero() && within.Before(by) {
			by = within
		}
		if c.isClosed() || time.Until(by) < pause || !c.sleep(pause) {
			if mayHaveRun {
				return unanswered // whatever came after it, that send may have acted
			}
			return res
		}
		res = c.exec(ctx, b, next, keys, args, acquires)
		if lost = IsConnectionError(res.Error()); !lost && !IsRefused(res.Error()) {
			return res
		}
		pause = min(max(2*pause, 10*time.Millisecond), ResendBackoff)
	}
}

// sleep pauses for d, and reports false when the Client was closed first.
func (c *Sender) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}

func (c *Sender) exec(ctx context.Context, b Bounds, s *lua.Script, keys, args []string, acquires bool) rueidis.RedisResult {
	t := sendTrace.Load()
	if t != nil { // copies: callers' buffers stay on their stacks
		(*t)(c.id, s, slices.Clone(keys), slices.Clone(args), nil)
	}
	var res rueidis.RedisResult
	if acquires && c.ack != 0 {
		res = c.runAcked(ctx, b, s, keys, args)
	} else {
		res = s.Exec(ctx, c.rdb, keys, args)
	}
	if t != nil {
		answer := res // res itself stays on the stack
		(*t)(c.id, s, slices.Clone(keys), slices.Clone(args), &answer)
	}
	return res
}

// sendTrace, when set, hears of every script sent and of its answer (SetSendTrace).
var sendTrace atomic.Pointer[func(client string, s *lua.Script, keys, args []string, res *rueidis.RedisResult)]

// SetSendTrace makes every Client call f before each send of a script (res nil) and after it, with
// the Client's id, the script, its KEYS and ARGV and Redis's answer (or the connection's error); nil
// stops it. It is for tests that reconcile what the clients sent, and what they were told, with what
// the server ran.
func SetSendTrace(f func(client string, s *lua.Script, keys, args []string, res *rueidis.RedisResult)) {
	if f == nil {
		sendTrace.Store(nil)
		return
	}
	sendTrace.Store(&f)
}

// Undo sends s.Undo() in the background, for up to undoBound: the give-back of an acquisition whose
// answer never came, which Redis may or may not have run. done, when not nil, runs once it is over.
func (c *Sender) Undo(s *lua.Script, keys, args []string, done func()) {
	c.CleanUp(0, s.Undo(), keys, args, func(rueidis.RedisResult) {
		if done != nil {
			done()
		}
	})
}

// CleanUp sends s, a step that cleans up after a call (a waiter's leaving, a give-back of what a try
// took), in the background until Redis has run it, for up to undoBound: never sent once and dropped
// when the connection fails or the slot moves. It waits for it at most wait, so that the caller
// returns with the clean-up done when Redis answers in time. done, when not nil, gets Redis's answer
// (or the last failure) once it is over. s must act once however often it is sent. After Close it
// sends nothing, and done gets ErrClosed.
func (c *Sender) CleanUp(wait time.Duration, s *lua.Script, keys, args []string, done func(rueidis.RedisResult)) {
	k, a := slices.Clone(keys), slices.Clone(args)
	over := make(chan struct{})
	if !c.background(func() {
		defer close(over)
		res := c.send(context.Background(), Bounds{}, s, k, a, false, undoBound)
		if done != nil {
			done(res)
		}
	}) {
		if done != nil {
			done(rueidis.NewErrorResult(errs.ErrClosed))
		}
		return
	}
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-over:
	case <-t.C:
	}
}

// background runs f on a goroutine that Close waits for (a while: see flushBound); false when the
// Client is closed.
func (c *Sender) background(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// IsConnectionError reports whether err says that the connection failed, so that Redis may or may
// not have run what was sent: an EOF, a reset, a refused dial, a timeout of the connection (not of a
// ctx), or a client that cannot reach Redis.
func IsConnectionError(err error) bool {
	if err == nil {
		return false
	}
	if _, fromRedis := rueidis.IsRedisErr(err); fromRedis || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // an answer, or the caller's end: context.DeadlineExceeded is a net.Error too
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, rueidis.ErrClosing) || errors.As(err, &ne)
}

// IsRefused reports whether err is Redis refusing a command that it did not run: the slot it touches
// is moving between cluster masters (TRYAGAIN; and ASK or MOVED, which rueidis follows unless
// ClusterOption.MaxMovedRedirections stops it), the cluster is down (CLUSTERDOWN), the server is
// loading its data (LOADING), or the node was a master and is now a replica (READONLY: a script's
// first write fails, and nothing before it wrote).
func IsRefused(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok || re.IsNil() {
		return false
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	switch code {
	case "TRYAGAIN", "ASK", "MOVED", "CLUSTERDOWN", "LOADING", "READONLY":
		return true
	}
	return false
}

// RequestID returns an id no call of any client used before: this client's UUID and a counter. It
// names the memo of a call (see above), and the records of waiters.
func (c *Sender) RequestID() string {
	return Numbered([]string{c.id}, int64(c.requests.Add(1)))
}
