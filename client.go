package redisync

import (
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/pubsub"
)

// Client is the connection to Redis that every primitive of this module is built on: one rueidis
// client, a random UUID that identifies this client in the owner fields it writes, one Pub/Sub
// notifier and one lease watchdog. It is safe for concurrent use; one per process is usually right.
// Make one with New or Wrap.
type Client struct{ engine }

// engine is embedded under a name of its own, so that the field is unexported.
type engine = core.Engine

// Option configures a Client.
type Option func(*options)

// options is what an Option sets: the Config of the Client's machinery.
type options struct {
	core.Config
	noReplicaAck bool // WithoutReplicaAck
}

// WithWatchdogTimeout sets the TTL of locks held without a fixed lease (default 30 s, as Redisson's
// lockWatchdogTimeout). The watchdog renews them every third of it; a process that dies lets its locks
// go after at most this long.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(c *options) { c.WatchdogTimeout = d }
}

// WithRecheckInterval bounds how long a waiter relies on release notifications alone before it tries
// again (default 5 s). A waiter also tries again when the holder's lease may have ended, so this only
// matters when a notification is lost and the holder's lease is long or unknown.
func WithRecheckInterval(d time.Duration) Option {
	return func(c *options) { c.Recheck = d }
}

// WithLogger sets where the Client reports what would otherwise pass silently (default:
// slog.Default()): at Warn, a hold lost without Unlock (renewal found it gone or could not reach the
// server in time, Unlock found it gone, a forced unlock), a failed renewal round, and a hold whose
// ctx was dropped without Unlock; at Info, the notifier subscribing again after losing its
// connection. Close is not logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *options) { c.Logger = l }
}

// WithNameMapper maps every object name before anything is built from it, as Redisson's NameMapper
// (Config.setNameMapper) does: the mapped name is the object's key, its side keys and channels are
// built from the mapped name, and Name methods return it. A Go and a Java process that map names
// the same way meet on the same keys; tenants that share one Redis keep apart with a prefix each:
//
//	redisync.WithNameMapper(func(name string) string { return "tenant-a:" + name })
//
// map must be a pure function that never returns "" (a name it maps to "" is refused with
// ErrInvalidArgument). Redisson's unmap has no counterpart here: nothing reads names back from
// Redis.
func WithNameMapper(mapper func(name string) string) Option {
	return func(c *options) { c.NameMapper = mapper }
}

// AllReplicas, as the count of WithReplicaAck, waits for every replica the master has, up to the
// timeout, and the acquisition stands when at least one of them acknowledged it: Redisson's
// checkLockSyncedSlaves. While any replica lags, every acquisition then takes the whole timeout; the
// default waits for the first replica alone (the package doc says why).
const AllReplicas = -1

// DefaultReplicaAckTimeout is how long an acquisition waits for the replicas by default (Redisson's
// slavesSyncTimeout).
const DefaultReplicaAckTimeout = time.Second

// WithReplicaAck makes every acquisition, renewal and fencing increment wait until replicas
// acknowledge it, so that a failover cannot hand a lock held here to a second owner (Redisson's
// checkLockSyncedSlaves): WAIT replicas timeout follows the script on the same connection (and
// WAITAOF 1 0 timeout, when the master writes an AOF and knows the command). replicas is how many
// must acknowledge, or AllReplicas. When too few acknowledge within timeout, the acquisition is given
// back, and a blocking call (Lock, TryLock with a wait, Acquire) tries again until its bound (ctx, or
// the wait) ends: a replica that lags for less than the bound costs the wait, nothing else. A call
// whose bound ends first, and a single try, fails with an error matching ErrNotReplicated; a try's
// WAIT never outlasts its bound. A renewal that is not acknowledged does not extend the lease. The
// default (the first replica, without WAITAOF), and why, are in the package doc.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *options) {
		c.ReplicaAck, c.ReplicaAckTimeout, c.noReplicaAck = replicas, timeout, false
	}
}

// WithoutReplicaAck turns replica acknowledgement off (Redisson's checkLockSyncedSlaves = false):
// acquisitions never wait for replicas, and a failover may lose an acquisition the old master had
// not replicated yet.
func WithoutReplicaAck() Option {
	return func(c *options) {
		c.ReplicaAck, c.ReplicaAckTimeout, c.noReplicaAck = 0, 0, true
	}
}

// New connects to Redis with rueidis options: one address for a standalone server, several (or one
// that answers CLUSTER SLOTS) for a cluster, or the sentinels' addresses with opt.Sentinel.MasterSet
// for Sentinel. Close closes the connection. It dials through opt's DialCtxFn or DialFn when set,
// wrapped so that the Client learns when a connection ends (see Wrap).
//
// Servers without client-side caching (managed services that lack CLIENT TRACKING, miniredis) need
// opt.DisableCache; redisync itself never uses the cache.
func New(opt rueidis.ClientOption, opts ...Option) (*Client, error) {
	watch := new(hold.ConnWatch) // holds are checked when a connection ends or is made anew
	opt.DialCtxFn, opt.DialFn = watch.Dial(opt), nil
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, err
	}
	c, err := newClient(rdb, true, stallBound(opt), watch, opts)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return c, nil
}

// Wrap builds a Client on a rueidis client the caller already has. Close leaves rdb open.
//
// New watches the connections it makes, and checks every hold as soon as one of them ends, so that
// a restart or a failover that lost a lock ends its holder's ctx within about one reconnect. Wrap
// cannot: its Client checks its holds when its notifier subscribes again after losing its
// connection (while something waits), and otherwise learns of such a loss at the next renewal, or at
// the end of a fixed lease.
//
// Acquisitions keep to a ctx deadline even when the server stalls; to do so without a goroutine per
// command, Wrap assumes that rdb gives up on an unanswered command within rueidis's default timeouts
// (ConnWriteTimeout 10 s, keep-alive 1 s). With longer ones, a deadline more than 12 s away may be
// overrun by a command in flight when the server stalls. New knows its own timeouts.
func Wrap(rdb rueidis.Client, opts ...Option) (*Client, error) {
	if rdb == nil {
		return nil, errs.Invalid("client", "", "nil rueidis client")
	}
	return newClient(rdb, false, stallBound(rueidis.ClientOption{}), nil, opts)
}

// stallBound is how long rueidis, configured with opt, may take to fail a command that a stalled
// server never answers: its ConnWriteTimeout, plus up to two keep-alive PING intervals when the
// command was pipelined behind others. 0 when nothing bounds it.
func stallBound(opt rueidis.ClientOption) time.Duration {
	keepAlive := opt.Dialer.KeepAlive
	if keepAlive == 0 {
		keepAlive = rueidis.DefaultTCPKeepAlive
	}
	timeout := opt.ConnWriteTimeout
	if timeout == 0 {
		timeout = max(rueidis.DefaultTCPKeepAlive, keepAlive) * 10
	}
	if keepAlive < 0 || timeout < 0 {
		return 0
	}
	return timeout + 2*keepAlive
}

func newClient(rdb rueidis.Client, owns bool, stall time.Duration, conns *hold.ConnWatch, opts []Option) (*Client, error) {
	o := options{Config: core.Config{StallBound: stall, Conns: conns}}
	for _, opt := range opts {
		opt(&o)
	}
	cfg := o.Config
	if cfg.WatchdogTimeout < 0 || (cfg.WatchdogTimeout > 0 && cfg.WatchdogTimeout < 30*time.Millisecond) {
		return nil, errs.Invalid("client", "", "watchdog timeout %v: want 0 (default) or at least 30ms", cfg.WatchdogTimeout)
	}
	if cfg.ReplicaAck != 0 || cfg.ReplicaAckTimeout != 0 {
		if cfg.ReplicaAck < 1 && cfg.ReplicaAck != AllReplicas {
			return nil, errs.Invalid("client", "", "replica acknowledgement by %d replicas: want at least 1, or AllReplicas", cfg.ReplicaAck)
		}
		if cfg.ReplicaAckTimeout < time.Millisecond {
			return nil, errs.Invalid("client", "", "replica acknowledgement timeout %v: want at least 1ms", cfg.ReplicaAckTimeout)
		}
	}
	if cfg.ReplicaAck == 0 && !o.noReplicaAck {
		cfg.ReplicaAck, cfg.ReplicaAckTimeout = -2, DefaultReplicaAckTimeout // the first replica (package doc)
	}
	if cfg.Recheck < 0 {
		return nil, errs.Invalid("client", "", "negative recheck interval %v", cfg.Recheck)
	}
	e, err := core.New(rdb, owns, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{e}, nil
}

// Close stops the watchdog and the notifier (and closes the connection if New opened it). It releases
// nothing: locks still held stop being renewed and expire within one watchdog timeout, or at the end
// of their fixed lease, and the contexts of their holders end with ErrClosed. Waiters return
// ErrClosed. Unlock before Close to release at once.
func (c *Client) Close() error { return core.Of(c).Close() }

// ID returns the client's UUID: owner fields in Redis read "<ID>:<owner id>".
func (c *Client) ID() string { return core.Of(c).Values.Client }

// Notifier returns the Client's notifier, which every waiter of its primitives parks on: one
// subscription connection, shared per channel. A primitive of one's own waits on it too (see the
// pubsub package).
func (c *Client) Notifier() *pubsub.Notifier { return core.Of(c).Notifier() }

// Redis returns the underlying rueidis client.
func (c *Client) Redis() rueidis.Client { return core.Of(c).RDB() }
