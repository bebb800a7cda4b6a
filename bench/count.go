package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Commands are counted where they leave the client, so that a script counts as the one command that
// crosses the network (the server's INFO commandstats also counts every call a script makes; that
// figure is reported beside this one as srv_cmds).

// countingClient counts every command a rueidis client sends, including those of its dedicated
// connections (Pub/Sub subscriptions).
type countingClient struct {
	rueidis.Client
	n *atomic.Int64
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

func (c countingClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.n.Add(1) // an upper bound: a cache hit sends nothing
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c countingClient) Receive(ctx context.Context, sub rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.Client.Receive(ctx, sub, fn)
}

func (c countingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, cancel := c.Client.Dedicate()
	return countingDedicated{dc, c.n}, cancel
}

func (c countingClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(dc rueidis.DedicatedClient) error { return fn(countingDedicated{dc, c.n}) })
}

type countingDedicated struct {
	rueidis.DedicatedClient
	n *atomic.Int64
}

func (c countingDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c countingDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.DedicatedClient.DoMulti(ctx, cmds...)
}

func (c countingDedicated) Receive(ctx context.Context, sub rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.DedicatedClient.Receive(ctx, sub, fn)
}

// countHook counts the commands a go-redis client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
