package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
)

// holder is one way to hold something while COMMAND runs: a lock, a read or write lock, a permit.
type holder struct {
	what string // for messages: "lock", "permit"
	// acquire waits at most wait (< 0: no bound) and returns a ctx that ends when the hold is lost.
	acquire func(ctx context.Context, wait time.Duration) (context.Context, error)
	release func(held context.Context) error
}

// runHeld runs COMMAND while h is held and returns the tool's exit status: COMMAND's own, or
// exitNotAcquired, exitLost, exitUnavailable, 126, 128+n for a signal that stopped the wait. argv is
// COMMAND's path (see resolve), then COMMAND and its arguments.
func runHeld(cmd *command, h holder, wait, grace time.Duration, argv []string) int {
	path, argv := argv[0], argv[1:]
	sigs := catchSignals()
	defer sigs.stop()

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopWatching := sigs.cancelOn(cancel)
	held, err := h.acquire(ctx, wait)
	stopWatching()
	var sig interrupted
	switch {
	case errors.As(context.Cause(ctx), &sig):
		if err == nil {
			h.release(held)
		}
		fmt.Fprintf(cmd.stderr, "redisync %s: %v while waiting for the %s\n", cmd.name, sig, h.what)
		return signalStatus(sig.sig)
	case errors.Is(err, redisync.ErrNotAcquired):
		fmt.Fprintf(cmd.stderr, "redisync %s: %v\n", cmd.name, err)
		return exitNotAcquired
	case errors.Is(err, redisync.ErrInvalidArgument):
		return cmd.usageError("%v", err)
	case err != nil:
		fmt.Fprintf(cmd.stderr, "redisync %s: %v\n", cmd.name, err)
		return exitUnavailable
	}

	c, err := startChild(path, argv)
	if err != nil {
		h.release(held)
		fmt.Fprintf(cmd.stderr, "redisync %s: %v\n", cmd.name, err)
		return exitCannotExec
	}
	status, lost := c.supervise(held, sigs, grace, func(cause error) {
		fmt.Fprintf(cmd.stderr, "redisync %s: %v; terminating %s\n", cmd.name, cause, argv[0])
	})
	err = h.release(held)
	switch {
	case lost != nil:
		return exitLost
	case errors.Is(err, redisync.ErrNotHeld):
		// COMMAND finished, but the lease ended before the release could be sent.
		fmt.Fprintf(cmd.stderr, "redisync %s: %v: the %s ended before %s did\n", cmd.name, err, h.what, argv[0])
		return exitLost
	case err != nil:
		fmt.Fprintf(cmd.stderr, "redisync %s: release failed, the %s stays until its lease ends: %v\n", cmd.name, h.what, err)
	}
	return status
}
