package core

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/lua"
)

// RetryBound limits how long rueidis keeps sending again a read (Query) or a retryable script (Run)
// that a network error interrupted, whatever ctx's deadline: releases run on a ctx that ignores
// cancellation, and rueidis retries until ctx ends. A call on a dead server returns an error within
// it.
const RetryBound = 5 * time.Second

// Run executes a script that only reads, or that gives something back (a release).
func (c *Client) Run(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	res := s.Exec(ctx, c.rdb, keys, args)
	if !s.Retryable() || res.NonRedisError() == nil || ctx.Err() != nil {
		return res
	}
	// A network error: send it again until it is answered, within RetryBound unless ctx is shorter.
	ctx, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	return s.ExecRetrying(ctx, c.rdb, keys, args)
}

// RunRelease is Run for a release script whose args[resent] is "0": the sends after a network
// error carry "1" there instead, telling the script that an earlier send may have released already
// (see rlock_release.lua). So the first send, the usual one, needs no record of a past one.
func (c *Client) RunRelease(ctx context.Context, s *lua.Script, keys, args []string, resent int) rueidis.RedisResult {
	res := s.Exec(ctx, c.rdb, keys, args)
	if res.NonRedisError() == nil || ctx.Err() != nil {
		return res
	}
	args[resent] = "1"
	ctx, cancel := context.WithTimeout(ctx, RetryBound)
	defer cancel()
	return s.ExecRetrying(ctx, c.rdb, keys, args)
}

// RunAcquire executes a script that takes or extends a hold (an acquisition, a renewal, a fencing
// increment): every write that another owner must never be able to overtake after a failover goes
// through here.
//
// With Config.ReplicaAck set, the write is followed on the same connection by a WAIT for the
// replicas. When too few acknowledge it, the result is an error wrapping a *ReplicationError (so
// errors.Is(err, ErrNotReplicated)) that still carries the script's reply: an acquisition must then
// be given back (see SplitReplication), and a renewal counts as failed.
func (c *Client) RunAcquire(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	if c.cfg.ReplicaAck != 0 {
		return c.runAcked(ctx, s, keys, args)
	}
	return s.Exec(ctx, c.rdb, keys, args)
}
