package core

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

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
// memo). A memo lives for memoTTL at most and is deleted once its answer is in.
//
// Only a connection failure is sent again. Redis's errors, the scripts' refusals and the library's
// own errors are answers and end the call at once.

// RetryBound limits how long a call is sent again after connection failures, whatever ctx's deadline:
// a call on a dead server returns its error within it.
const RetryBound = 5 * time.Second

// undoBound is how long the give-back of an acquisition whose answer never came keeps being sent:
// within the life of a memo (memoTTL in the scripts, 60 s), so that it still finds what it undoes.
const undoBound = 30 * time.Second

// resendBackoff is the longest pause between two sends of a call whose connection keeps failing.
const resendBackoff = 250 * time.Millisecond

// Send sends the script s that changes state, and returns Redis's answer. A connection failure makes
// it send s.Resent() again, within RetryBound. When ctx can end, Send returns at its end and the call
// goes on in the background until answered or the bound passes: it takes effect once or not at all,
// never twice.
func (c *Client) Send(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	return c.sendAway(ctx, s, keys, args, false)
}

// SendAcquiring is Send for a script that takes or extends a hold (an acquisition, a renewal, a
// fencing increment): with replica acknowledgement on, WAIT follows it (see replicas.go). notReplicated
// matches ErrNotReplicated when too few replicas acknowledged it: reply is still the script's, and
// what it acquired must be given back.
func (c *Client) SendAcquiring(ctx context.Context, s *lua.Script, keys, args []string) (reply rueidis.RedisResult, notReplicated error) {
	return splitReplication(c.sendAway(ctx, s, keys, args, true))
}

func (c *Client) sendAway(ctx context.Context, s *lua.Script, keys, args []string, acquires bool) rueidis.RedisResult {
	if ctx.Done() == nil {
		return c.send(ctx, s, keys, args, acquires, RetryBound)
	}
	// The call may outlive this one: it gets copies, so that callers may pass buffers of their own.
	k, a := slices.Clone(keys), slices.Clone(args)
	done := make(chan rueidis.RedisResult, 1)
	if !c.background(func() { done <- c.send(context.WithoutCancel(ctx), s, k, a, acquires, RetryBound) }) {
		return rueidis.NewErrorResult(ErrClosed)
	}
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		return rueidis.NewErrorResult(context.Cause(ctx))
	}
}

// send runs the call on ctx, which must not end before the call does, sending it again after
// connection failures for up to bound.
func (c *Client) send(ctx context.Context, s *lua.Script, keys, args []string, acquires bool, bound time.Duration) rueidis.RedisResult {
	res := c.exec(ctx, s, keys, args, acquires)
	if !isConnectionError(res.Error()) {
		return res
	}
	deadline := time.Now().Add(bound)
	if b, ok := ctx.Value(resendKey{}).(tryBound); ok && b.by.Before(deadline) {
		deadline = b.by // a try within its wait's bounds (wait.go)
	}
	again := s.Resent()
	pause := time.Duration(0) // the first re-send goes at once: rueidis dials a new connection
	for {
		if c.isClosed() || time.Until(deadline) < pause {
			return res
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-c.done:
				t.Stop()
				return res
			}
		}
		res = c.exec(ctx, again, keys, args, acquires)
		if !isConnectionError(res.Error()) {
			return res
		}
		pause = min(max(2*pause, 10*time.Millisecond), resendBackoff)
	}
}

func (c *Client) exec(ctx context.Context, s *lua.Script, keys, args []string, acquires bool) rueidis.RedisResult {
	t := sendTrace.Load()
	if t != nil { // copies: callers' buffers stay on their stacks
		(*t)(c.id, s, slices.Clone(keys), slices.Clone(args), nil)
	}
	var res rueidis.RedisResult
	if acquires && c.cfg.ReplicaAck != 0 {
		res = c.runAcked(ctx, s, keys, args)
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
func (c *Client) Undo(s *lua.Script, keys, args []string, done func()) {
	if !c.background(func() {
		c.send(context.Background(), s.Undo(), keys, args, false, undoBound)
		if done != nil {
			done()
		}
	}) && done != nil {
		done()
	}
}

// background runs f on a goroutine that Close waits for (a while: see flushBound); false when the
// Client is closed.
func (c *Client) background(f func()) bool {
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

// isConnectionError reports whether err says that the connection failed, so that Redis may or may
// not have run what was sent: an EOF, a reset, a refused dial, a timeout of the connection (not of a
// ctx), or a client that cannot reach Redis.
func isConnectionError(err error) bool {
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

// RequestID returns an id no call of any client used before: this client's UUID and a counter. It
// names the memo of a call (see above), and the records of waiters.
func (c *Client) RequestID() string {
	return numbered([]string{c.id}, int64(c.requests.Add(1)))
}
