// Package errs is the bottom of the engine: the sentinel errors every layer returns, the errors that
// name the object they concern, and Redis's refusals told as sentinels (refusal.go).
package errs

import (
	"errors"
	"fmt"
)

// The sentinel errors. Package redisync re-exports each of them under the same name; they are defined
// here so that the machinery below redisync can return them without an import cycle.
var (
	ErrNotHeld         = errors.New("redisync: not held by this owner")
	ErrNotAcquired     = errors.New("redisync: not acquired within the wait bound")
	ErrLost            = errors.New("redisync: lock lost")
	ErrReleased        = errors.New("redisync: released")
	ErrAlreadyHeld     = errors.New("redisync: already held by this owner (re-entry not allowed)")
	ErrClosed          = errors.New("redisync: client closed")
	ErrInvalidArgument = errors.New("redisync: invalid argument")
	ErrNotReplicated   = errors.New("redisync: not acknowledged by enough replicas")
	ErrNotInnermost    = errors.New("redisync: holds taken inside this one are still open")
	ErrNotInitialized  = errors.New("redisync: not initialized")
	ErrWrongType       = errors.New("redisync: the name holds other data")
	// ErrNoPermission: Redis refused the user (NOPERM, NOAUTH, WRONGPASS); see refusal.go.
	ErrNoPermission = errors.New("redisync: not permitted by Redis")
	// ErrRefused: Redis refused the call for a reason of its own (OOM, READONLY, BUSY...); see refusal.go.
	ErrRefused = errors.New("redisync: refused by Redis")
)

// Errorf wraps err (a sentinel or a Redis error) with the kind and name of the object it concerns, so that
// errors.Is keeps working and the message says which lock failed. A Redis error becomes a refusal
// (see refusal.go).
func Errorf(kind, name string, err error) error {
	return &objectError{kind: kind, name: name, err: refusal(name, err)}
}

// Invalid returns an ErrInvalidArgument that says what was wrong.
func Invalid(kind, name, format string, args ...any) error {
	return &objectError{kind: kind, name: name, err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)}
}

// objectError is an error about one named object (a lock, a semaphore, ...): "<kind> "<name>": <err>".
type objectError struct {
	kind, name string
	err        error
}

func (e *objectError) Error() string { return fmt.Sprintf("%s %q: %v", e.kind, e.name, e.err) }

func (e *objectError) Unwrap() error { return e.err }
