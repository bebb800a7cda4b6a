// Package send is the engine's lowest layer: a script sent to Redis exactly once. A call carries a
// request id; a send whose answer was lost is sent again as the script's Resent variant within
// bounds the caller gives (Bounds), a refusal (TRYAGAIN, LOADING...) as it was; an acquiring write
// waits for replicas to acknowledge it (replicas.go); what nobody waits for (a memo's delete) goes
// out in batches (later.go). Everything above it (holds, the wait loop, the primitives) sends through
// a Sender.
package send

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

// Sender sends one Client's scripts and commands.
type Sender struct {
	rdb        rueidis.Client
	owns       bool // Close closes rdb
	id         string
	ack        int           // replicas an acquiring write waits for (see Config.ReplicaAck in package core)
	ackTimeout time.Duration // how long it waits for them
	replicas   replicaCache
	deletes    deletes
	requests   atomic.Uint64

	mu     sync.Mutex
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup // calls finishing in the background
}

// New returns a Sender on rdb for the Client whose id is id; ack and ackTimeout say how acquiring
// writes wait for replicas (0: not at all; -1 all of them; -2 the first). owns: Close closes rdb.
func New(rdb rueidis.Client, owns bool, id string, ack int, ackTimeout time.Duration) *Sender {
	return &Sender{rdb: rdb, owns: owns, id: id, ack: ack, ackTimeout: ackTimeout, done: make(chan struct{})}
}

// Shut stops new calls: from now on every call answers errs.ErrClosed, and Done is closed. It
// reports false when the Sender was shut before.
func (c *Sender) Shut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.closed = true
	close(c.done)
	return true
}

// Drain waits, after Shut, for the calls finishing in the background (flushBound more at most,
// then the connection is closed under them when the Sender owns it) and the last deletes.
func (c *Sender) Drain() {
	c.closeDeletes()
	finished := make(chan struct{})
	go func() { c.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(flushBound):
	}
	if c.owns {
		c.rdb.Close() // fails what is still in flight at once
	}
	<-finished
}

// Done is closed once Shut was called.
func (c *Sender) Done() <-chan struct{} { return c.done }

// RDB returns the rueidis client.
func (c *Sender) RDB() rueidis.Client { return c.rdb }

// Closed returns errs.ErrClosed once Shut was called, else nil: what a call that sends nothing (a
// no-op, such as releasing 0 permits) answers after Close, as every other call does.
func (c *Sender) Closed() error {
	if c.isClosed() {
		return errs.ErrClosed
	}
	return nil
}

func (c *Sender) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// ClosedOr returns errs.ErrClosed once Shut was called, else err: what a call answers whose
// connection Close may have ended under it.
func (c *Sender) ClosedOr(err error) error {
	if c.isClosed() {
		return errs.ErrClosed
	}
	return err
}

// Numbered joins head, n in decimal and tail with ':' in one allocation.
func Numbered(head []string, n int64, tail ...string) string {
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

// Slot returns the Redis Cluster hash slot of key.
func Slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) & 16383
}

// crc16 is CRC-16/XMODEM, the hash of Redis Cluster.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
