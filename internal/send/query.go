package send

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/lua"
)

// QueryScript runs s, a script that only reads, and gives up with an error when Redis has not
// answered within RetryBound, whatever ctx's deadline: a query on a dead server must return even with
// a ctx that has no deadline. It is sent again after connection failures and refusals meanwhile.
// Every query of a primitive (IsLocked, HoldCount, TTL, a count) goes through here. After Close it
// returns ErrClosed, and sends nothing. The scripts (refuse.lua) tell a name that holds other data
// from the primitive's own.
func (c *Sender) QueryScript(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	if c.isClosed() {
		return rueidis.NewErrorResult(errs.ErrClosed)
	}
	bounded, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	// Sent again only while the bound leaves time: the last connection error is the answer then.
	by, _ := bounded.Deadline()
	return c.bounded(ctx, bounded, c.send(bounded, Bounds{Lost: by, Refused: by}, s, keys, args, false, RetryBound))
}

// bounded is the result res of a query on bounded, ctx bounded by RetryBound.
func (c *Sender) bounded(ctx, bounded context.Context, res rueidis.RedisResult) rueidis.RedisResult {
	err := res.NonRedisError()
	switch {
	case err == nil:
	case c.isClosed() && IsConnectionError(err):
		return rueidis.NewErrorResult(errs.ErrClosed)
	case ctx.Err() == nil && bounded.Err() != nil:
		return rueidis.NewErrorResult(fmt.Errorf("no answer from Redis within %v: %w", RetryBound, err))
	}
	return res
}
