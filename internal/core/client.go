// Package core is the engine every primitive of redisync runs on; package redisync is its public
// face. Each file is one room: the Client and its connection (this file), names, errors, events,
// owners in the ctx, holds, waiting, the watchdog, replica acknowledgement, sending scripts exactly
// once, and the hash locks that rlock, fairlock and rwlock describe as data (lock.go).
package core

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/waiting"
	"github.com/redisync/redisync/pubsub"
)

// Defaults shared by every primitive.
const (
	defaultWatchdogTimeout = 30 * time.Second
	defaultRecheck         = 5 * time.Second
)

// Config holds what every primitive of one client shares.
type Config struct {
	// WatchdogTimeout is the TTL of a lock held without a fixed lease; the watchdog renews it every
	// third of that.
	WatchdogTimeout time.Duration
	// Recheck bounds how long a waiter trusts notifications alone before it tries again.
	Recheck time.Duration
	// ReplicaAck, when not 0, makes every acquiring write wait for that many replicas, each wait
	// bounded by ReplicaAckTimeout: -1 for as many as the master has (at least one must answer), and
	// -2, the default, for the first of them only, never for the master's AOF fsync.
	ReplicaAck        int
	ReplicaAckTimeout time.Duration
	// StallBound is how long the connection may take to fail a command that a stalled server never
	// answers (0: unknown): a try that ctx's deadline could come before runs apart from its caller.
	StallBound time.Duration
	// Logger receives what would otherwise pass silently; nil means slog.Default().
	Logger *slog.Logger
	// Events, when set, receives every event, on the goroutine where it happens.
	Events func(hold.Event)
	// Conns, when set, is how the rueidis client dials: the holds are checked when a connection ends.
	Conns *hold.ConnWatch
	// NameMapper, when set, maps every object name before keys and channels are built from it.
	NameMapper func(string) string
}

// Client is one connection to Redis with its identity, its notifier, its watchdog and its holds.
type Client struct {
	*send.Sender
	*waiting.Waiter
	rdb      rueidis.Client
	cluster  bool
	id       string
	cfg      Config
	notifier *pubsub.Notifier
	holds    *hold.Holds
	ev       hold.Events
	listings listings

	// Values are what every script of this Client is given.
	Values values
	// counts is false where a count of a channel's subscribers cannot be trusted (classic Pub/Sub on
	// a cluster counts the subscribers of one node only).
	counts bool

	tags atomic.Uint64 // numbers waiters' tags

	watchdogMs, windowMs string // the default lease and the wait window, as scripts take them

}

// New wraps rdb in a Client, and returns it as package redisync's Client embeds it. When owns is
// true, Close closes rdb too.
func New(rdb rueidis.Client, owns bool, cfg Config) (Engine, error) {
	if cfg.WatchdogTimeout == 0 {
		cfg.WatchdogTimeout = defaultWatchdogTimeout
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = defaultRecheck
	}
	cluster := rdb.Mode() == rueidis.ClientModeCluster
	sharded := false
	if cluster {
		v, err := serverMajorVersion(rdb)
		if err != nil {
			return Engine{}, err
		}
		sharded = v >= 7
	}
	id := uuid.NewString()
	c := &Client{
		Sender:  send.New(rdb, owns, id, cfg.ReplicaAck, cfg.ReplicaAckTimeout),
		rdb:     rdb,
		cluster: cluster,
		id:      id,
		cfg:     cfg,
		counts:  !cluster || sharded,
		ev:      hold.Events{Func: cfg.Events, Logger: cfg.Logger},
	}
	c.watchdogMs, c.windowMs = ms(cfg.WatchdogTimeout), ms(c.waitWindow())
	c.Values = values{Publish: "publish", NumSub: "numsub", Window: c.windowMs, Client: id, Recheck: ms(cfg.Recheck)}
	if sharded {
		c.Values.Publish, c.Values.NumSub = "spublish", "shardnumsub"
	}
	if !c.counts {
		c.Values.NumSub, c.Values.Window = "", "0"
	}
	c.notifier = pubsub.New(rdb, sharded)
	c.notifier.OnReconnect(c.reconnected)
	c.Waiter = waiting.New(c.Sender, c.notifier, &c.ev, cfg.Recheck, cfg.StallBound)
	c.holds = hold.New(c.Sender, &c.ev, cfg.WatchdogTimeout, cluster)
	if cfg.Conns != nil {
		cfg.Conns.Attach(c.holds)
	}
	return Engine{c}, nil
}

// serverMajorVersion asks one node for its version; a cluster uses sharded Pub/Sub from Redis 7 on.
func serverMajorVersion(rdb rueidis.Client) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, node := range rdb.Nodes() {
		info, err := node.Do(ctx, node.B().Info().Section("server").Build()).ToString()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				major, _, _ := strings.Cut(v, ".")
				return strconv.Atoi(major)
			}
		}
		break
	}
	return 0, nil
}

// Close stops the watchdog and the notifier. Locks still held are not released: their renewal stops,
// so they expire within one watchdog timeout (or at the end of their fixed lease), and their holders'
// contexts end with ErrClosed. Calls finishing in the background get flushBound more.
func (c *Client) Close() error {
	if !c.Shut() {
		return nil
	}
	c.holds.Close()
	c.notifier.Close()
	c.Drain()
	return nil
}

// Notifier returns the client's notifier.
func (c *Client) Notifier() *pubsub.Notifier { return c.notifier }

// Pending returns how many holds this client records and how many of them the watchdog renews:
// after the last release, and what finishes in the background after it, both are 0 (leak checks).
func (c *Client) Pending() (holds, renewals int) { return c.holds.Pending() }

// waitWindow is how long a waiter's record in Redis says it will keep waiting without trying again:
// twice the recheck interval, the longest a live waiter goes without a try.
func (c *Client) waitWindow() time.Duration { return 2 * c.cfg.Recheck }

// leaseMs returns lease in milliseconds, as scripts take it; lease 0 is the watchdog timeout.
func (c *Client) leaseMs(lease time.Duration) string {
	if lease == 0 {
		return c.watchdogMs
	}
	return ms(lease)
}

// values are what every script of a Client is given.
type values struct {
	// Publish is the command scripts publish with: PUBLISH, or SPUBLISH on a Redis 7+ cluster, where
	// the notifier subscribes with SSUBSCRIBE.
	Publish string
	// NumSub is the PUBSUB subcommand that counts a channel's subscribers (NUMSUB, SHARDNUMSUB), or
	// "" where a count cannot be trusted (classic Pub/Sub on a cluster counts one node's): scripts
	// given "" wake everyone, as Redisson does.
	NumSub string
	// Window is how long a waiter's record lasts, in ms: twice the recheck interval, the longest a
	// live waiter goes without a try; "0" where releases hand nothing over (NumSub "").
	Window string
	// Client is the Client's id, the first half of every owner field it writes.
	Client string
	// Recheck is the recheck interval, in ms.
	Recheck string
}

// ms formats d in milliseconds, as scripts take durations.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Engine is what package redisync's Client embeds (see New): the packages of the primitives reach
// the Client behind it with Of, by import, and its users see no method of it.
type Engine struct{ c *Client }

func (e Engine) engine() *Client { return e.c }

// Of returns the Client behind c, a *redisync.Client (nil for a nil one).
func Of[T any, P interface {
	*T
	engine() *Client
}](c P) *Client {
	if c == nil {
		return nil
	}
	return c.engine()
}
