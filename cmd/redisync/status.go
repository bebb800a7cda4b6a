package main

import (
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/errs"
)

// statusOf is the tool's exit status for an error from Redis or on the way to it, the same in
// every subcommand: retry loops can tell a server that is down or stalled (69) from data that is
// not what the command expects (65) and from a user that lacks a permission or a password (77),
// which no retry will fix. The library's errors say which by their sentinel; Redis's own, from the
// tool's direct reads and from connecting, are read the library's way (errs.Errorf, which tells them as its sentinels) first.
func statusOf(err error) int {
	err = errs.Errorf("", "", err)
	switch {
	case errors.Is(err, redisync.ErrNoPermission):
		return exitNoPerm
	case errors.Is(err, redisync.ErrWrongType):
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

// secrets are the passwords in use; redactor masks them in every message, whatever its source.
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

// redactor writes through to w with the credentials in a message masked (see redact).
type redactor struct{ w io.Writer }

func (r redactor) Write(p []byte) (int, error) {
	secrets.Lock()
	list := secrets.list
	secrets.Unlock()
	if _, err := io.WriteString(r.w, redact(string(p), list)); err != nil {
		return 0, err
	}
	return len(p), nil
}

const mask = "********"

var (
	// The password in a URL's user info: scheme://user:PASSWORD@.
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)[^\s/?#@]*@`)
	// An argument as a server echoes it, in single, double or back quotes.
	quotedArg = regexp.MustCompile("'[^']*'|\"[^\"]*\"|`[^`]*`")
	// AUTH's arguments, [user] password, as a command line shows them.
	authArgs = regexp.MustCompile(`(?i)\bAUTH(\s+\S+){1,2}`)
)

// redact masks the credentials in msg where they are: the password of any URL, and a known secret
// where it stands as a whole argument, quoted as a server echoes the arguments of a command it
// refuses (HELLO 3 AUTH user password), or after AUTH. A secret's letters elsewhere are left alone:
// masking every occurrence would garble messages (the password "e" in "redisync") and show which
// letters the password has.
func redact(msg string, known []string) string {
	msg = urlUserinfo.ReplaceAllString(msg, "${1}"+mask+"@")
	if len(known) == 0 {
		return msg
	}
	msg = quotedArg.ReplaceAllStringFunc(msg, func(q string) string {
		if slices.Contains(known, q[1:len(q)-1]) {
			return q[:1] + mask + q[len(q)-1:]
		}
		return q
	})
	return authArgs.ReplaceAllStringFunc(msg, func(m string) string {
		words := strings.Fields(m)
		for i, w := range words[1:] {
			if slices.Contains(known, w) {
				words[i+1] = mask
			}
		}
		return strings.Join(words, " ")
	})
}
