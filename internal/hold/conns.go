package hold

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// Connections that end.
//
// A server that restarts without persistence, or fails over to a replica that had not received the
// last writes, loses holds without a word: the holder would learn it at its next renewal (a third
// of the watchdog timeout), or never before its fixed lease ends, while another process may acquire
// the lock within milliseconds of the server's return. Neither happens without the Client's
// connections to that server ending: killed with the process, closed by rueidis when Sentinel names
// another master, or timed out when the server has gone quiet. So the Client watches its
// connections, and when one ends it has every hold checked at once (watchdog.check): those gone end
// with ErrLost, within about one reconnect. The notifier's connection is among them, and it is
// always reading: a server that goes away is noticed at once, not at the next command. A connection
// made anew tells nothing by itself (rueidis dials lazily, one connection after another), and is
// not watched for that.

// ConnWatch tells a Client's holds of its connections' ends. New dials through it; it is made before the
// rueidis client that dials, and told of the Client once there is one.
type ConnWatch struct{ c atomic.Pointer[Holds] }

// Attach makes w report to c.
func (w *ConnWatch) Attach(c *Holds) { w.c.Store(c) }

// ended has the holds checked.
func (w *ConnWatch) ended() {
	if c := w.c.Load(); c != nil && c.s.Closed() == nil {
		c.watchdog.check()
	}
}

// Dial returns opt's way of dialing (its DialCtxFn, DialFn or rueidis's own), with each connection
// it makes watched.
func (w *ConnWatch) Dial(opt rueidis.ClientOption) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
	dial := opt.DialCtxFn
	if dial == nil {
		fn := opt.DialFn
		dial = func(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
			switch {
			case fn != nil:
				return fn(dst, d, cfg)
			case cfg != nil:
				return (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", dst)
			}
			return d.DialContext(ctx, "tcp", dst)
		}
	}
	return func(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		conn, err := dial(ctx, dst, d, cfg)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn, w: w}, nil
	}
}

// watchedConn reports its end: its first failed read or write, or its closing.
type watchedConn struct {
	net.Conn
	w    *ConnWatch
	once sync.Once
}

func (c *watchedConn) end() { c.once.Do(c.w.ended) }

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.end()
	}
	return n, err
}

func (c *watchedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.end()
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.end()
	return c.Conn.Close()
}
