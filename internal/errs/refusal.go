package errs

import (
	"errors"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// Refusals: Redis's own errors, and the scripts' refusals of a name that holds other data, told to
// users as one of the package's sentinels with a sentence they understand, never with the script's
// internals (its SHA, "user_script:N", a Go parse error). The original stays reachable with
// errors.As and errors.Unwrap.

// refused is a refusal: the sentinel it matches, what it says, and what Redis answered.
type refused struct {
	sentinel error
	detail   string
	cause    error
}

func (e *refused) Error() string { return e.sentinel.Error() + ": " + e.detail }

func (e *refused) Unwrap() []error { return []error{e.sentinel, e.cause} }

// refusal returns err, when it is an answer from Redis that refuses the call or data the call cannot
// read, as a refusal matching one of the sentinels; other errors as they are. name is the object's
// key: a refusal that names it is about the name itself, one that names another key about one of its
// side keys. Errorf applies it to every error it wraps.
func refusal(name string, err error) error {
	var done *refused
	if err == nil || errors.As(err, &done) {
		return err
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) && !re.IsNil() {
		return refusalOf(name, re.Error(), err)
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) || rueidis.IsParseErr(err) {
		return &refused{ErrWrongType, "a value this primitive cannot read", err}
	}
	return err
}

// refusalOf reads Redis's error message msg.
func refusalOf(name, msg string, err error) error {
	code, rest, _ := strings.Cut(msg, " ")
	switch code {
	case "WRONGTYPE":
		// A script's own: "WRONGTYPE redisync:<what> <key>" (refuse.lua); otherwise Redis's, from a
		// command on a key of another type, which does not say which key.
		detail := "a key of another type"
		if mark, ok := strings.CutPrefix(rest, "redisync:"); ok {
			what, key, _ := strings.Cut(mark, " ")
			detail = describe(what)
			if key != name {
				detail += " under its side key " + strconv.Quote(key)
			}
		}
		return &refused{ErrWrongType, detail, err}
	case "NOPERM":
		return &refused{ErrNoPermission, "the user's ACL does not allow a command or key this call needs", err}
	case "NOAUTH":
		return &refused{ErrNoPermission, "the server wants a password", err}
	case "WRONGPASS":
		return &refused{ErrNoPermission, "wrong user or password", err}
	case "OOM":
		return &refused{ErrRefused, "Redis is out of memory (maxmemory) and takes no writes", err}
	case "READONLY":
		return &refused{ErrRefused, "the server is a read-only replica", err}
	case "BUSY":
		return &refused{ErrRefused, "Redis is busy running a script", err}
	case "LOADING":
		return &refused{ErrRefused, "Redis is loading its data set", err}
	case "MISCONF":
		return &refused{ErrRefused, "Redis takes no writes while it cannot save to disk", err}
	case "MASTERDOWN":
		return &refused{ErrRefused, "the replica has lost its master", err}
	case "NOREPLICAS":
		return &refused{ErrRefused, "too few replicas are connected to take writes", err}
	case "CLUSTERDOWN":
		return &refused{ErrRefused, "the cluster is down", err}
	case "TRYAGAIN":
		return &refused{ErrRefused, "the object's cluster slot is moving between masters", err}
	case "CROSSSLOT":
		return &refused{ErrRefused, "the keys are in different cluster slots", err}
	}
	if strings.Contains(msg, "not an integer") || strings.Contains(msg, "not a valid float") {
		// A command that counts (INCR, HINCRBY) found a value that is not a number.
		return &refused{ErrWrongType, "a value that is not a number", err}
	}
	return &refused{ErrRefused, "Redis answered with an error (" + code + ")", err}
}

// describe says what a script found (refuse.lua's kind_of).
func describe(what string) string {
	switch what {
	case "string":
		return "a string"
	case "text":
		return "a string that is not a number"
	case "count":
		return "a number (a semaphore's or a countdown latch's count, or an application's)"
	case "hash":
		return "a hash"
	case "list":
		return "a list"
	case "set":
		return "a set"
	case "zset":
		return "a sorted set"
	case "stream":
		return "a stream"
	case "lock":
		return "a lock (Redisson's lock hash)"
	case "rwlock":
		return "a read-write lock"
	case "group":
		return "a group lock"
	case "limiter":
		return "a rate limiter"
	case "latch":
		return "a number that is no countdown latch's count"
	}
	return "a key of type " + what
}
