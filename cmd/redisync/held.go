package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redisync/redisync"
)

// holder is one way to hold something while COMMAND runs: a lock, a read or write lock, a permit.
type holder struct {
	what string // for messages: "lock", "permit"
	name string
	// acquire waits at most wait (< 0: no bound) and returns a ctx that ends when the hold is lost.
	acquire func(ctx context.Context, wait time.Duration) (context.Context, error)
	release func(held context.Context) error
	// owner is how the hold is named in Redis: the owner field, or the permit's id.
	owner func(held context.Context) string
	// env is what COMMAND gets in its environment besides the tool's (a fencing token).
	env func(held context.Context) []string
}

// heldOptions are the settings of runHeld that come from flags.
type heldOptions struct {
	wait  time.Duration // < 0: no bound
	start time.Time     // when the run started: the wait counts from it, connecting included
	grace time.Duration
	ttl   time.Duration // the hold's TTL in Redis: its lease, or the watchdog timeout
	waits *waitFlags    // -E: the status when not acquired within wait
	// recordCommand: the holder's registration has COMMAND's arguments, not only its name.
	recordCommand bool
}

// releaseTimeout bounds the release: a Redis that went away must not keep the tool, and the next
// holder, waiting longer than it takes to say so.
const releaseTimeout = 3 * time.Second

// runHeld runs COMMAND while h is held and returns the tool's exit status: COMMAND's own, or
// -E's status, exitLost, exitUnavailable (or exitDataErr, exitNoPerm), 126, 128+n for a signal that
// stopped the wait. argv is COMMAND's path (see resolve), then COMMAND and its arguments.
func runHeld(cmd *command, c *redisync.Client, h holder, o heldOptions, argv []string) int {
	path, argv := argv[0], argv[1:]
	sigs := catchSignals()
	defer sigs.stop()

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopWatching := sigs.cancelOn(cancel)
	wait := o.wait
	if wait > 0 {
		wait = max(0, wait-time.Since(o.start))
	}
	held, err := acquireSaying(ctx, cmd, c, h, wait)
	stopWatching()
	var sig interrupted
	switch {
	case errors.As(context.Cause(ctx), &sig):
		if err == nil {
			h.release(held)
		}
		cmd.say("%v while waiting for the %s", sig, h.what)
		return signalStatus(sig.sig)
	case errors.Is(err, redisync.ErrNotAcquired):
		return o.waits.notAcquired(cmd, "%v", err)
	case errors.Is(err, redisync.ErrInvalidArgument):
		return cmd.usageError("%v", err)
	case err != nil:
		return redisError(cmd, err)
	}

	reg := registration{stop: func() {}} // a rate limiter's permit has no holder to name
	if h.owner != nil {
		reg = register(c, h.name, h.owner(held), o.ttl, newHolderInfo(argv, o.recordCommand))
	}
	env := childEnv(os.Environ())
	if h.env != nil {
		env = append(env, h.env(held)...)
	}
	child, err := startChild(path, argv, o.grace, env)
	if err != nil {
		reg.stop()
		release(c, h, held)
		fmt.Fprintf(cmd.stderr, "redisync %s: %v\n", cmd.name, err)
		return exitCannotExec
	}
	status, lost := child.supervise(held, sigs, o.grace, func(cause error) {
		fmt.Fprintf(cmd.stderr, "redisync %s: %v%s; terminating %s\n", cmd.name, cause, redisState(c), argv[0])
	})
	reg.stop()
	err = release(c, h, held)
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

// childEnv is env without the secrets the tool consumed: COMMAND needs no password to Redis, and
// its own children, logs and crash reports would spread it. A URL keeps its user and address.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case passwordEnv, sentinelPasswordEnv:
			continue
		case urlEnv:
			u, err := url.Parse(v)
			if err != nil {
				if strings.Contains(v, "@") {
					continue // unreadable, and may hold a password
				}
				break
			}
			if _, ok := u.User.Password(); ok {
				u.User = url.User(u.User.Username())
				kv = k + "=" + u.String()
			}
		}
		out = append(out, kv)
	}
	return out
}

// release releases h, unless Redis is unreachable: then it says so at once, naming the error, and
// leaves the hold to its lease rather than retrying while the next holder waits for the tool.
func release(c *redisync.Client, h holder, held context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(held), releaseTimeout)
	defer cancel()
	if err := reachable(ctx, c); err != nil {
		return fmt.Errorf("Redis is unreachable: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.release(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("Redis did not answer within %v", releaseTimeout)
	}
}

// redisState names what is wrong with Redis, if anything, for the message about a lost hold: a
// renewal that kept failing failed for a reason.
func redisState(c *redisync.Client) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := reachable(ctx, c); err != nil {
		return " (Redis: " + explain(err) + ")"
	}
	return ""
}

// reachable pings Redis, twice when the first fails: a connection that broke answers EOF first,
// and the second try names the cause (connection refused, no route to host).
func reachable(ctx context.Context, c *redisync.Client) error {
	rdb := c.Redis()
	err := rdb.Do(ctx, rdb.B().Ping().Build()).NonRedisError()
	if err != nil {
		if err2 := rdb.Do(ctx, rdb.B().Ping().Build()).NonRedisError(); err2 != nil {
			err = err2
		} else {
			err = nil
		}
	}
	return err
}

// redisError reports an error from Redis and returns its status (see statusOf).
func redisError(cmd *command, err error) int {
	fmt.Fprintf(cmd.stderr, "redisync %s: %s\n", cmd.name, explain(err))
	return statusOf(err)
}

// acquireSaying acquires h. When stderr is a terminal and h is taken, it first says, once, what it
// waits for and who holds it.
func acquireSaying(ctx context.Context, cmd *command, c *redisync.Client, h holder, wait time.Duration) (context.Context, error) {
	f, ok := cmd.stderr.(interface{ Fd() uintptr })
	if rf, isR := cmd.stderr.(redactor); isR {
		f, ok = rf.w.(interface{ Fd() uintptr })
	}
	if wait == 0 || cmd.out.quiet || !ok || !isTerminal(int(f.Fd())) {
		return h.acquire(ctx, wait)
	}
	start := time.Now()
	held, err := h.acquire(ctx, 0)
	if !errors.Is(err, redisync.ErrNotAcquired) {
		return held, err
	}
	fmt.Fprintf(cmd.stderr, "redisync %s: waiting for the %s %q, held by %s\n", cmd.name, h.what, h.name, holdersOf(ctx, c, h.name))
	if wait > 0 {
		wait = max(0, wait-time.Since(start))
	}
	return h.acquire(ctx, wait)
}
