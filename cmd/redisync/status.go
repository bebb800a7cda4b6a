package main

import (
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

// statusOf is the tool's exit status for an error from Redis or on the way to it, the same in
// every subcommand: retry loops can tell a server that is down or stalled (69) from data that is
// not what the command expects (65) and from a user that lacks a permission or a password (77),
// which no retry will fix.
func statusOf(err error) int {
	msg := err.Error()
	switch {
	case hasCode(err, "NOPERM", "NOAUTH", "WRONGPASS") || strings.Contains(msg, "NOPERM") ||
		strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH"):
		return exitNoPerm
	case hasCode(err, "WRONGTYPE") || strings.Contains(msg, "WRONGTYPE") ||
		strings.Contains(msg, "not an integer") || strings.Contains(msg, "not a valid float") ||
		strings.Contains(msg, "not a number"):
		return exitDataErr
	case errors.Is(err, redisync.ErrNotAcquired):
		return exitNotAcquired
	}
	return exitUnavailable
}

func hasCode(err error, codes ...string) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, c := range codes {
		if strings.HasPrefix(msg, c) {
			return true
		}
	}
	return false
}

// explain turns the errors a mistaken address or setup produces into what is wrong.
func explain(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "received unknown message type") || strings.Contains(msg, "protocol error"):
		return "not a Redis server (it answered something that is not the Redis protocol: HTTP, TLS without --tls?)"
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return "TLS was asked for, but the server does not speak TLS"
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH"):
		return "authentication failed (user or password wrong, or missing): " + msg
	case strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset"):
		return msg + " (the server hung up: a TLS port without --tls, or not a Redis server?)"
	}
	return msg
}

// secrets are the passwords in use; redact removes them from every message, whatever its source.
var secrets struct {
	sync.Mutex
	list []string
}

func addSecret(s string) {
	if s == "" {
		return
	}
	secrets.Lock()
	secrets.list = append(secrets.list, s)
	secrets.Unlock()
}

// redactor writes through to w with every known secret replaced.
type redactor struct{ w io.Writer }

func (r redactor) Write(p []byte) (int, error) {
	secrets.Lock()
	list := secrets.list
	secrets.Unlock()
	if len(list) == 0 {
		return r.w.Write(p)
	}
	s := string(p)
	for _, sec := range list {
		s = strings.ReplaceAll(s, sec, "********")
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
