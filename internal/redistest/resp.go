package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds Do: long enough for DEBUG SLEEP of a few seconds,
// short enough that a stalled server fails a test instead of hanging it.
const DefaultTimeout = 5 * time.Second

// Do runs one command on a fresh connection, so that tests can inspect or
// disturb a server (DEBUG SLEEP, CLIENT KILL, PEXPIRE, INFO) without sharing
// the client under test, and so that it works whatever state the server is
// in (a sentinel, a cluster node before its slots are assigned, a replica).
//
// The reply is rendered as text: simple strings, bulk strings and integers as
// they are; a nil reply as ""; arrays (nested ones flattened) as their
// elements joined by "\n". A Redis error reply becomes a Go error whose
// message is the server's text, e.g. "ERR unknown command ...". It gives up
// after DefaultTimeout; use DoContext for another deadline.
func (s *Server) Do(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	return s.DoContext(ctx, args...)
}

// DoContext is Do with the caller's deadline, e.g. to show that a paused
// server does not answer within 100ms.
func (s *Server) DoContext(ctx context.Context, args ...string) (string, error) {
	return do(ctx, s.Addr, args...)
}

// do speaks RESP2 without HELLO, so it works on every server role and never
// depends on the client library under test.
func do(ctx context.Context, addr string, args ...string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("redistest: Do needs a command")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return "", fmt.Errorf("redistest: %s %s: %w", addr, args[0], err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return "", fmt.Errorf("redistest: %s %s: %w", addr, args[0], err)
	}
	reply, err := readReply(bufio.NewReader(conn))
	var re redisError
	if err != nil && !errors.As(err, &re) {
		// The connection's deadline is the context's, and may fire first.
		var ne net.Error
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		} else if _, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		return "", fmt.Errorf("redistest: %s %s: %w", addr, args[0], err)
	}
	return reply, err
}

// redisError is an error reply from the server, kept apart from I/O errors
// so that its text reaches the caller unchanged.
type redisError string

func (e redisError) Error() string { return string(e) }

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "", redisError(body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("bad bulk length %q", body)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("bad array length %q", body)
		}
		elems := make([]string, 0, max(n, 0))
		for range n {
			e, err := readReply(r)
			if err != nil {
				return "", err
			}
			elems = append(elems, e)
		}
		return strings.Join(elems, "\n"), nil
	default:
		return "", fmt.Errorf("unexpected reply %q", line)
	}
}
