package main

import (
	"context"
	"io"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

const lockHeader = `Usage: redisync lock [flags] NAME -- COMMAND [ARGS...]

Runs COMMAND while holding the lock NAME in Redis, like flock(1) across machines: of all the
processes that run 'redisync lock NAME' against the same Redis, one at a time runs its COMMAND.
The lock is Redisson's RLock (a Java service calling getLock("NAME") excludes it too); with --fair
its fair lock, which grants in arrival order; with --read or --write a side of its read-write lock,
where readers share and a writer is alone.

Without --lease, a watchdog renews the lock while COMMAND runs; if the tool dies (kill -9, a
crashed machine), the lock expires within the watchdog timeout (--watchdog). With --lease the lock
expires at the end of the lease whatever happens, and COMMAND is stopped if it is still running.

COMMAND runs in its own process group (unless stdin is a terminal), which receives the signals.
SIGINT, SIGTERM and SIGHUP sent to the tool are passed on to COMMAND; once it ends the lock is
released. If the lock is lost while COMMAND runs, COMMAND gets SIGTERM, then SIGKILL after --grace.
If the tool itself is killed, COMMAND gets SIGKILL (Linux).
Flags go before NAME, or anywhere before "--".
`

const heldExitStatus = `
Exit status:
  COMMAND's own   COMMAND ran (128+n when a signal n ended it)
  75              not acquired within --wait; COMMAND did not run
  76              lost while COMMAND ran (its lease ended, or it was taken away): COMMAND was
                  sent SIGTERM (SIGKILL after --grace), or it ended after the lease had
  64              bad flags or arguments
  69              Redis unreachable or failing; COMMAND did not run
  126, 127        COMMAND cannot be run, or was not found
  128+n           signal n arrived while waiting; COMMAND did not run
`

const lockFooter = heldExitStatus + `
Examples:
  redisync lock nightly-report -- ./report.sh --date today
  redisync lock --wait 0 deploy -- make deploy           # exit 75 at once if a deploy runs
  redisync lock --fair --wait 1h release-train -- ./ship.sh
  redisync lock --read schema -- ./migrate.sh --check     # many at once, but never during...
  redisync lock --write schema -- ./migrate.sh --apply    # ...a migration
  redisync lock --wait 10m --lease 1h --addr redis:6379 backup -- pg_dump -f dump.sql app
`

// lockFlags are the flags that lock and semaphore share.
type lockFlags struct {
	wait     waitFlag
	lease    *time.Duration
	grace    *time.Duration
	watchdog *time.Duration
	conn     connFlags
}

func (f *lockFlags) register(cmd *command, leaseUsage string) {
	cmd.fs.Var(&f.wait, "wait", "give up with status 75 after `DURATION` without acquiring; 0 tries once (default: wait as long as it takes)")
	f.lease = durationFlag(cmd.fs, "lease", 0, leaseUsage)
	f.grace = durationFlag(cmd.fs, "grace", 10*time.Second, "once the lock or permit is lost, give COMMAND `DURATION` between SIGTERM and SIGKILL")
	f.watchdog = durationFlag(cmd.fs, "watchdog", 30*time.Second, "without --lease: the TTL, `DURATION`, renewed every third of it while COMMAND runs;\nif the tool dies, others wait at most this long")
	f.conn.register(cmd.fs)
}

// parseHeld parses "[flags] NAME -- COMMAND [ARGS...]" and finds COMMAND, before anything is
// acquired or even connected, so that a typo costs no lock.
func (f *lockFlags) parseHeld(cmd *command, args []string) (name string, argv []string, code int) {
	pos, tail, _, code := cmd.parse(args, 1)
	if code >= 0 {
		return "", nil, code
	}
	switch {
	case len(pos) == 0:
		return "", nil, cmd.usageError("missing NAME")
	case len(pos) > 1:
		return "", nil, cmd.usageError("unexpected argument %q (COMMAND goes after \"--\")", pos[1])
	case len(tail) == 0:
		return "", nil, cmd.usageError("missing COMMAND")
	case pos[0] == "":
		return "", nil, cmd.usageError("empty NAME")
	case *f.watchdog < 30*time.Millisecond:
		return "", nil, cmd.usageError("--watchdog %v is too short: at least 30ms", *f.watchdog)
	}
	path, code := resolve(tail[0], cmd.stderr, cmd.name)
	if code >= 0 {
		return "", nil, code
	}
	return pos[0], append([]string{path}, tail...), -1
}

// cmdLock runs COMMAND under a lock.
func cmdLock(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("lock", lockHeader, lockFooter, stdout, stderr)
	var f lockFlags
	f.register(cmd, "hold the lock for at most `DURATION`, without renewal; COMMAND is stopped when it ends (default: renewed while COMMAND runs)")
	fair := cmd.fs.Bool("fair", false, "a fair lock (Redisson's getFairLock): waiters get it in the order they came")
	read := cmd.fs.Bool("read", false, "the read side of the read-write lock NAME (Redisson's getReadWriteLock): readers share it")
	write := cmd.fs.Bool("write", false, "the write side of the read-write lock NAME: one writer, and no reader")
	name, argv, code := f.parseHeld(cmd, args)
	if code >= 0 {
		return code
	}
	switch {
	case *read && *write:
		return cmd.usageError("--read and --write exclude each other")
	case *fair && (*read || *write):
		return cmd.usageError("--fair does not go with --read or --write: the read-write lock is not fair")
	}
	c, code := f.conn.connect(cmd, redisync.WithWatchdogTimeout(*f.watchdog))
	if code >= 0 {
		return code
	}
	defer c.Close()
	var l locker
	var err error
	switch {
	case *fair:
		l, err = fairlock.New(c, name, fairlock.WithLease(*f.lease))
	case *read || *write:
		var rw *rwlock.RWLock
		if rw, err = rwlock.New(c, name, rwlock.WithLease(*f.lease)); err == nil {
			if l = rw.WriteLock(); *read {
				l = rw.ReadLock()
			}
		}
	default:
		l, err = rlock.New(c, name, rlock.WithLease(*f.lease))
	}
	if err != nil {
		return cmd.usageError("%v", err)
	}
	return runHeld(cmd, lockHolder(l), f.wait.bound(), *f.grace, argv)
}

// locker is what rlock, fairlock and both sides of rwlock have in common.
type locker interface {
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
}

func lockHolder(l locker) holder {
	return holder{
		what: "lock",
		acquire: func(ctx context.Context, wait time.Duration) (context.Context, error) {
			if wait < 0 {
				return l.Lock(ctx)
			}
			return l.TryLock(ctx, wait)
		},
		release: l.Unlock,
	}
}
