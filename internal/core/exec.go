package core

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/lua"
)

// Run executes a script that only reads, or that gives something back (a release).
func (c *Client) Run(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	return s.Exec(ctx, c.rdb, keys, args)
}

// RunAcquire executes a script that takes or extends a hold (an acquisition, a renewal, a fencing
// increment): every write that another owner must never be able to overtake after a failover goes
// through here.
func (c *Client) RunAcquire(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
	return s.Exec(ctx, c.rdb, keys, args)
}
