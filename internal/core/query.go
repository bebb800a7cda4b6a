package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

// Query sends cmd, a command that only reads, and gives up with an error when Redis has not answered
// within RetryBound, whatever ctx's deadline: rueidis sends a read again after every network error
// and every refusal (TRYAGAIN while its slot moves, CLUSTERDOWN, LOADING) until ctx ends, so a query
// on a dead server would otherwise never return with a ctx that has no deadline. Every query of a
// primitive (IsLocked, HoldCount, TTL, a count) goes through here; one that is a script (EVAL, which
// rueidis does not know to read only) is marked to be sent again alike.
func (c *Client) Query(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	bounded, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	res := c.rdb.Do(bounded, cmd.ToRetryable())
	if err := res.NonRedisError(); err != nil && ctx.Err() == nil && bounded.Err() != nil {
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

// Locked runs fn between lock and unlock, with the hold's ctx. When the hold was lost while fn ran,
// the loss is returned with fn's error (the failed unlock only repeats it).
func Locked(ctx context.Context, lock func(context.Context) (context.Context, error),
	unlock func(context.Context) error, fn func(context.Context) error) error {
	held, err := lock(ctx)
	if err != nil {
		return err
	}
	ferr := fn(held)
	lost := context.Cause(held)
	uerr := unlock(held)
	if errors.Is(lost, ErrLost) {
		return errors.Join(ferr, lost)
	}
	return errors.Join(ferr, uerr)
}
