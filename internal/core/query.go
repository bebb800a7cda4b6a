package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/lua"
)

// Query sends cmd, a command that only reads, and gives up with an error when Redis has not answered
// within RetryBound, whatever ctx's deadline: rueidis sends a read again after every network error
// and every refusal (TRYAGAIN while its slot moves, CLUSTERDOWN, LOADING) until ctx ends, so a query
// on a dead server would otherwise never return with a ctx that has no deadline. Every query of a
// primitive (IsLocked, HoldCount, TTL, a count) goes through here; one that is a script (EVAL, which
// rueidis does not know to read only) is marked to be sent again alike. After Close it returns
// ErrClosed, and sends nothing.
func (c *Client) Query(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if c.isClosed() {
		return rueidis.NewErrorResult(errs.ErrClosed)
	}
	bounded, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	return c.bounded(ctx, bounded, c.rdb.Do(bounded, cmd.ToRetryable()))
}

// QueryScript runs s, a script that only reads, as Query sends a command: within RetryBound, sent
// again after connection failures and refusals meanwhile. The reads that must tell a name holding
// other data from the primitive's own (refuse.lua) go through here.
func (c *Client) QueryScript(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	if c.isClosed() {
		return rueidis.NewErrorResult(errs.ErrClosed)
	}
	bounded, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	// Sent again only while the bound leaves time: the last connection error is the answer then.
	by, _ := bounded.Deadline()
	return c.bounded(ctx, bounded, c.send(context.WithValue(bounded, resendKey{}, resendBounds{lost: by, refused: by}), s, keys, args, false, RetryBound))
}

// bounded is the result res of a query on bounded, ctx bounded by RetryBound.
func (c *Client) bounded(ctx, bounded context.Context, res rueidis.RedisResult) rueidis.RedisResult {
	err := res.NonRedisError()
	switch {
	case err == nil:
	case c.isClosed() && isConnectionError(err):
		return rueidis.NewErrorResult(errs.ErrClosed)
	case ctx.Err() == nil && bounded.Err() != nil:
		return rueidis.NewErrorResult(fmt.Errorf("no answer from Redis within %v: %w", RetryBound, err))
	}
	return res
}

// detach returns ctx without its cancellation (context.WithoutCancel), or ctx itself when it cannot
// be cancelled anyway, which spares an allocation on the common path.
func detach(ctx context.Context) context.Context {
	switch x := ctx.(type) {
	case *heldCtx:
		return &x.detached
	case *detachedCtx:
		return x
	}
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// Locked runs fn between lock and unlock, with the hold's ctx: every primitive's Do. When the hold
// was lost while fn ran, the loss is returned with fn's error (an unlock that fails with ErrNotHeld
// only repeats it). When fn panics, or ends its goroutine (runtime.Goexit, t.FailNow), unlock runs
// before the panic goes on, so that the hold is given back and its ctx ends: the panic is not
// recovered, and keeps its stack.
func Locked(ctx context.Context, lock func(context.Context) (context.Context, error),
	unlock func(context.Context) error, fn func(context.Context) error) error {
	held, err := lock(ctx)
	if err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			unlock(held)
		}
	}()
	ferr := fn(held)
	returned = true
	lost := context.Cause(held)
	uerr := unlock(held)
	if errors.Is(lost, errs.ErrLost) {
		if errors.Is(uerr, errs.ErrNotHeld) {
			uerr = nil
		}
		return errors.Join(ferr, lost, uerr)
	}
	return errors.Join(ferr, uerr)
}
