// Package core is the machinery every primitive shares: the connection, the owner identity, the
// notifier, the watchdog and the record of this client's holds. Package redisync is its public face.
package core

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/pubsub"
)

// Defaults shared by every primitive.
const (
	DefaultWatchdogTimeout = 30 * time.Second
	DefaultRecheck         = 5 * time.Second
)

// Config holds what every primitive of one client shares.
type Config struct {
	// WatchdogTimeout is the TTL of a lock held without a fixed lease; the watchdog renews it every
	// third of that.
	WatchdogTimeout time.Duration
	// Recheck bounds how long a waiter trusts notifications alone: after that long without news it
	// tries again, so a lost message or a holder that set no expiry never costs more.
	Recheck time.Duration
	// ReplicaAck, when not 0, makes every acquiring write wait for replicas (see RunAcquire): that
	// many replicas, or AllReplicas. ReplicaAckTimeout bounds each wait.
	ReplicaAck        int
	ReplicaAckTimeout time.Duration
	// ReplicaAckByDefault: ReplicaAck is the default (AllReplicas, 1 s, as Redisson's
	// checkLockSyncedSlaves), which waits for replicas only, never for the master's AOF fsync.
	ReplicaAckByDefault bool
	// StallBound is how long the connection may take to fail a command that a stalled server never
	// answers (0: unknown). A try that ctx's deadline could come before runs apart from its caller.
	StallBound time.Duration
	// Logger receives what would otherwise pass silently (a hold dropped without Unlock, a hold lost,
	// a failed renewal, a reconnect); nil means slog.Default().
	Logger *slog.Logger
	// Events, when set, receives every Event, on the goroutine where it happens (see Event).
	Events func(Event)
	// NameMapper, when set, maps every object name before keys and channels are built from it
	// (Redisson's NameMapper.map; see Client.Name).
	NameMapper func(string) string
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// Client is one connection to Redis with its identity, its notifier, its watchdog and its holds.
type Client struct {
	rdb      rueidis.Client
	ownsRDB  bool
	cluster  bool
	id       string
	cfg      Config
	publish  string
	numsub   string
	notifier *pubsub.Notifier
	watchdog *Watchdog
	replicas replicaCache
	deletes  deletes
	listings listings

	requests atomic.Uint64

	watchdogMs, windowMs string // the defaults scripts are given, formatted once

	mu     sync.Mutex
	holds  map[holdID]*hold
	closed bool
	done   chan struct{}
}

// New wraps rdb. When owns is true, Close closes rdb too.
func New(rdb rueidis.Client, owns bool, cfg Config) (*Client, error) {
	if cfg.WatchdogTimeout == 0 {
		cfg.WatchdogTimeout = DefaultWatchdogTimeout
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = DefaultRecheck
	}
	sharded := false
	if rdb.Mode() == rueidis.ClientModeCluster {
		v, err := serverMajorVersion(rdb)
		if err != nil {
			return nil, err
		}
		sharded = v >= 7
	}
	c := &Client{
		rdb:     rdb,
		ownsRDB: owns,
		cluster: rdb.Mode() == rueidis.ClientModeCluster,
		id:      uuid.NewString(),
		cfg:     cfg,
		publish: "publish",
		numsub:  "numsub",
		holds:   make(map[holdID]*hold),
		done:    make(chan struct{}),
	}
	c.watchdogMs = strconv.FormatInt(cfg.WatchdogTimeout.Milliseconds(), 10)
	c.windowMs = strconv.FormatInt(c.WaitWindow().Milliseconds(), 10)
	switch {
	case sharded:
		c.publish, c.numsub = "spublish", "shardnumsub"
	case rdb.Mode() == rueidis.ClientModeCluster:
		c.numsub = "" // classic Pub/Sub counts the subscribers of one node only
	}
	c.notifier = pubsub.New(rdb, sharded)
	c.notifier.OnReconnect(c.reconnected)
	c.watchdog = newWatchdog(c.RunAcquire, c.renewalFailed, cfg.WatchdogTimeout, rdb.Mode() == rueidis.ClientModeCluster)
	return c, nil
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
// contexts end with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	var all []*hold
	for _, h := range c.holds {
		all = append(all, h)
	}
	c.mu.Unlock()
	c.watchdog.close()
	for _, h := range all {
		h.end(ErrClosed)
	}
	c.notifier.Close()
	c.closeDeletes()
	if c.ownsRDB {
		c.rdb.Close()
	}
	return nil
}

// RDB returns the rueidis client.
func (c *Client) RDB() rueidis.Client { return c.rdb }

// ID returns the client's random UUID, the first half of every owner field it writes.
func (c *Client) ID() string { return c.id }

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// Owner returns the owner field "<clientID>:<ownerID>" that Redis stores for owner id.
func (c *Client) Owner(id int64) string { return numbered([]string{c.id}, id) }

// LeaseMs returns lease in milliseconds, as scripts take it; lease 0 is the watchdog timeout.
func (c *Client) LeaseMs(lease time.Duration) string {
	if lease == 0 {
		return c.watchdogMs
	}
	return strconv.FormatInt(lease.Milliseconds(), 10)
}

// WaitWindowMs is WaitWindow in milliseconds.
func (c *Client) WaitWindowMs() string { return c.windowMs }

// Publish returns the command that scripts publish with: "spublish" on a Redis 7+ cluster, where the
// notifier uses sharded Pub/Sub, else "publish".
func (c *Client) Publish() string { return c.publish }

// Record returns "<field>:<n>:<a>:<b>...", n a number this client never used before: the name of one
// waiter's record, unique among all waiters, in one allocation.
func (c *Client) Record(field string, parts ...string) string {
	return numbered([]string{field}, int64(c.requests.Add(1)), parts...)
}

// RequestID returns an id never returned before by any client: the client's UUID and a counter. It
// names a request's record in Redis (an unlock latch), so that a retried request finds it.
func (c *Client) RequestID() string { return c.RequestKey("") }

// RequestKey returns "prefix:" and a new RequestID, in one allocation (the id alone for prefix "").
func (c *Client) RequestKey(prefix string) string {
	n := int64(c.requests.Add(1))
	if prefix == "" {
		return numbered([]string{c.id}, n)
	}
	return numbered([]string{prefix, c.id}, n)
}

// numbered joins head, n in decimal and tail with ':' in one allocation.
func numbered(head []string, n int64, tail ...string) string {
	size := 21
	for _, p := range head {
		size += len(p) + 1
	}
	for _, p := range tail {
		size += len(p) + 1
	}
	var b strings.Builder
	b.Grow(size)
	for _, p := range head {
		b.WriteString(p)
		b.WriteByte(':')
	}
	var digits [20]byte
	b.Write(strconv.AppendInt(digits[:0], n, 10))
	for _, p := range tail {
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// NumSub returns the PUBSUB subcommand that counts a channel's subscribers where the scripts can
// trust it ("numsub", "shardnumsub"), or "" on a cluster with classic Pub/Sub, where a node counts
// only its own subscribers.
func (c *Client) NumSub() string { return c.numsub }

// WaitWindow is how long a waiter's record in Redis says it will keep waiting without trying again:
// twice the recheck interval, the longest a live waiter goes without a try.
func (c *Client) WaitWindow() time.Duration { return 2 * c.cfg.Recheck }

// Notifier returns the client's notifier.
func (c *Client) Notifier() *pubsub.Notifier { return c.notifier }

// Done is closed when the client is closed.
func (c *Client) Done() <-chan struct{} { return c.done }

// Closed reports whether Close was called.
func (c *Client) Closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Renewals returns how many holds the watchdog renews (for leak checks in tests).
func (c *Client) Renewals() int { return c.watchdog.Len() }

// Holds returns how many holds this client records (for leak checks in tests).
func (c *Client) Holds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.holds)
}
