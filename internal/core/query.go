package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// Query sends cmd, a command that only reads, and gives up with an error when Redis has not answered
// within RetryBound, whatever ctx's deadline: rueidis sends a read again after every network error
// until ctx ends, so a query on a dead server would otherwise never return with a ctx that has no
// deadline. Every query of a primitive (IsLocked, HoldCount, TTL, a count) goes through here.
func (c *Client) Query(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	bounded, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	res := c.rdb.Do(bounded, cmd)
	if err := res.NonRedisError(); err != nil && ctx.Err() == nil && bounded.Err() != nil {
		return rueidis.NewErrorResult(fmt.Errorf("no answer from Redis within %v: %w", RetryBound, err))
	}
	return res
}

// What the locks kept as Redisson's hash (field = owner, value = hold count) answer alike.

// Exists reports whether key exists.
func (c *Client) Exists(ctx context.Context, kind, name, key string) (bool, error) {
	n, err := c.Query(ctx, c.rdb.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		return false, Errorf(kind, name, err)
	}
	return n == 1, nil
}

// HoldCount returns the hold count stored under field in the hash key (0 when there is none). ctx
// names the owner and is used detached from its cancellation, as Unlock does: a hold's ctx ends when
// the hold does, which is when a caller most wants to ask.
func (c *Client) HoldCount(ctx context.Context, kind, name, key, field string) (int, error) {
	n, err := c.Query(Detach(ctx), c.rdb.B().Hget().Key(key).Field(field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, Errorf(kind, name, err)
	}
	return int(n), nil
}

// TTL returns how long key lives unless renewed: 0 when it does not exist, -1 when it has no expiry.
func (c *Client) TTL(ctx context.Context, kind, name, key string) (time.Duration, error) {
	ms, err := c.Query(ctx, c.rdb.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		return 0, Errorf(kind, name, err)
	}
	switch ms {
	case -2:
		return 0, nil
	case -1:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Detach returns ctx without its cancellation (context.WithoutCancel), or ctx itself when it cannot
// be cancelled anyway, which spares an allocation on the common path.
func Detach(ctx context.Context) context.Context {
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
