package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/layout"
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

COMMAND runs in its own process group under a small supervisor, a second redisync process; in the
foreground of a terminal, that group becomes the terminal's foreground, so Ctrl-C reaches COMMAND
once. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to the tool are passed on to the group. When COMMAND
ends, what it left running gets SIGTERM, then SIGKILL after --grace, and only then is the lock
released. If the lock is lost while COMMAND runs, the group gets SIGTERM, and COMMAND's whole tree
SIGKILL after --grace. If the tool itself dies (kill -9, the OOM killer), the supervisor kills
COMMAND's whole tree at once. On Linux the supervisor is the tree's child subreaper, so no process of
it escapes, not even one that left the process group; elsewhere a process that leaves the group
(setsid, a daemon) is not stopped.

With --fencing, COMMAND finds the lock's fencing token in $REDISYNC_FENCING_TOKEN: a number that
grows with every acquisition, so that the store COMMAND writes to can refuse a writer that was
paused past its lease and overtaken.

While the tool waits with stderr on a terminal, it says once what it waits for and who holds it;
'redisync inspect NAME' shows the holders' host, pid and program too (and, with --record-command,
their whole command line). COMMAND's environment is the tool's without the passwords it took.
Flags go before NAME, or anywhere before "--".
`

const heldExitStatus = `
Exit status:
  COMMAND's own   COMMAND ran (128+n when a signal n ended it)
  75              not acquired within --wait; COMMAND did not run (-E chooses another status)
  76              lost while COMMAND ran (its lease ended, or it was taken away): COMMAND was
                  sent SIGTERM (SIGKILL after --grace), or it ended after the lease had
  64              bad flags or arguments
  65              NAME holds data of another kind (WRONGTYPE, not a number); COMMAND did not run
  69              Redis unreachable or failing; COMMAND did not run
  77              Redis refused: NOPERM (see docs/cli.md's minimal ACL), wrong user or password
  126, 127        COMMAND cannot be run, or was not found
  128+n           signal n arrived while waiting; COMMAND did not run
`

const lockFooter = heldExitStatus + `
Examples:
  redisync lock nightly-report -- ./report.sh --date today
  redisync lock -n deploy -- make deploy                  # exit 75 at once if a deploy runs
  redisync lock -w 10 -E 0 cron-job -- ./job.sh           # skip quietly if it runs for 10 s more
  redisync lock --fencing ledger -- sh -c 'write --token $REDISYNC_FENCING_TOKEN'
  redisync lock --fair --wait 1h release-train -- ./ship.sh
  redisync lock --read schema -- ./migrate.sh --check     # many at once, but never during...
  redisync lock --write schema -- ./migrate.sh --apply    # ...a migration
  redisync lock --wait 10m --lease 1h --addr redis:6379 backup -- pg_dump -f dump.sql app
`

// lockFlags are the flags that lock and semaphore share.
type lockFlags struct {
	waitFlags
	lease    *time.Duration
	grace    *time.Duration
	watchdog *time.Duration
	record   bool
	conn     connFlags
}

func (f *lockFlags) register(cmd *command, what, leaseUsage string) {
	f.waitFlags.register(cmd, what)
	f.lease = durationFlag(cmd.fs, "lease", 0, leaseUsage)
	f.grace = durationFlag(cmd.fs, "grace", 10*time.Second, "once the lock or permit is lost, give COMMAND `DURATION` between SIGTERM and SIGKILL")
	f.watchdog = durationFlag(cmd.fs, "watchdog", 30*time.Second, "without --lease: the TTL, `DURATION`, renewed every third of it while COMMAND runs;\nif the tool dies, others wait at most this long")
	cmd.fs.BoolVar(&f.record, "record-command", false, "register COMMAND with its arguments beside the hold, for 'redisync inspect' (default: its name,\nthe pid and the host only: whoever reads Redis reads the arguments, secrets included)")
	f.conn.register(cmd.fs)
}

// parseHeld parses "[flags] NAME -- COMMAND [ARGS...]" and finds COMMAND, before anything is
// acquired or even connected, so that a typo costs no lock.
func (f *lockFlags) parseHeld(cmd *command, args []string) (name string, argv []string, code int) {
	name, argv, code = parseHeld(cmd, args, &f.waitFlags)
	if code < 0 && *f.watchdog < 30*time.Millisecond {
		return "", nil, cmd.usageError("--watchdog %v is too short: at least 30ms", *f.watchdog)
	}
	return name, argv, code
}

// parseHeld parses "[flags] NAME -- COMMAND [ARGS...]" for lock, semaphore and rate.
func parseHeld(cmd *command, args []string, f *waitFlags) (name string, argv []string, code int) {
	pos, tail, _, code := cmd.parse(args, 1)
	if code >= 0 {
		return "", nil, code
	}
	return heldArgs(cmd, pos, tail, f)
}

// heldArgs checks the NAME and COMMAND that parseHeld parsed, and finds COMMAND.
func heldArgs(cmd *command, pos, tail []string, f *waitFlags) (name string, argv []string, code int) {
	switch {
	case len(pos) == 0:
		return "", nil, cmd.usageError("missing NAME")
	case len(pos) > 1:
		return "", nil, cmd.usageError("unexpected argument %q (COMMAND goes after \"--\")", pos[1])
	case len(tail) == 0:
		return "", nil, cmd.usageError("missing COMMAND")
	case pos[0] == "":
		return "", nil, cmd.usageError("empty NAME")
	}
	if code := f.check(cmd); code >= 0 {
		return "", nil, code
	}
	if err := checkName(pos[0]); err != nil {
		return "", nil, cmd.usageError("%v", err)
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
	f.register(cmd, "acquired", "hold the lock for at most `DURATION`, without renewal; COMMAND is stopped when it ends (default: renewed while COMMAND runs)")
	var k lockKind
	cmd.fs.BoolVar(&k.fair, "fair", false, "a fair lock (Redisson's getFairLock): waiters get it in the order they came")
	cmd.fs.BoolVar(&k.read, "read", false, "the read side of the read-write lock NAME (Redisson's getReadWriteLock): readers share it")
	cmd.fs.BoolVar(&k.write, "write", false, "the write side of the read-write lock NAME: one writer, and no reader")
	cmd.fs.BoolVar(&k.fencing, "fencing", false, "take a fencing token with the lock and pass it to COMMAND in $"+fencingEnv)
	name, argv, code := f.parseHeld(cmd, args)
	if code >= 0 {
		return code
	}
	if err := k.check(); err != nil {
		return cmd.usageError("%v", err)
	}
	start := time.Now()
	c, code := f.conn.connect(cmd, f.budget(), redisync.WithWatchdogTimeout(*f.watchdog))
	if code >= 0 {
		return code
	}
	defer c.Close()
	ctx, cancel := f.before(start)
	code = checkLockKey(ctx, cmd, c, name)
	cancel()
	if code >= 0 {
		return code
	}
	l, err := k.lock(c, name, *f.lease)
	if err != nil {
		return cmd.usageError("%v", err)
	}
	h := lockHolder(c, name, l)
	if k.fencing {
		h.env = func(held context.Context) []string {
			t, _ := l.(interface {
				Token(context.Context) (int64, bool)
			}).Token(held)
			return []string{fencingEnv + "=" + strconv.FormatInt(t, 10)}
		}
	}
	return runHeld(cmd, c, h, f.options(start), argv)
}

// lockKind is which lock 'redisync lock' takes: rlock's, the fair lock, or a side of the read-write
// lock, with fencing tokens or not.
type lockKind struct{ fair, read, write, fencing bool }

// check refuses flags that exclude each other.
func (k lockKind) check() error {
	switch {
	case k.read && k.write:
		return errors.New("--read and --write exclude each other")
	case k.fair && (k.read || k.write):
		return errors.New("--fair does not go with --read or --write: the read-write lock is not fair")
	case k.fencing && (k.read || k.write):
		return errors.New("--fencing does not go with --read or --write: the read-write lock has no fencing tokens")
	}
	return nil
}

// lock returns the lock of this kind called name, with a fixed lease (0: the watchdog's).
func (k lockKind) lock(c *redisync.Client, name string, lease time.Duration) (locker, error) {
	switch {
	case k.fair:
		opts := []fairlock.Option{fairlock.WithLease(lease)}
		if k.fencing {
			opts = append(opts, fairlock.WithFencing())
		}
		return fairlock.New(c, name, opts...)
	case k.read || k.write:
		rw, err := rwlock.New(c, name, rwlock.WithLease(lease))
		if err != nil {
			return nil, err
		}
		if k.read {
			return rw.ReadLock(), nil
		}
		return rw.WriteLock(), nil
	}
	opts := []rlock.Option{rlock.WithLease(lease)}
	if k.fencing {
		opts = append(opts, rlock.WithFencing())
	}
	return rlock.New(c, name, opts...)
}

// fencingEnv carries the fencing token to COMMAND.
const fencingEnv = "REDISYNC_FENCING_TOKEN"

// options are runHeld's settings from the flags, for a run that started at start.
func (f *lockFlags) options(start time.Time) heldOptions {
	ttl := *f.lease
	if ttl == 0 {
		ttl = *f.watchdog
	}
	return heldOptions{wait: f.wait.bound(), start: start, grace: *f.grace, ttl: ttl, waits: &f.waitFlags, recordCommand: f.record}
}

// checkLockKey returns exitDataErr, with a message naming the key's type but never its content,
// when name holds something that is no lock: an application's hash, whose fields the lock's script
// would take for holders, waiting for ever and writing waiter records beside it. A key of another
// type is refused by the script itself, as it is here.
func checkLockKey(ctx context.Context, cmd *command, c *redisync.Client, name string) int {
	typ, res, code := keyType(ctx, cmd, c, name, func(rdb rueidis.Client, key string) rueidis.Completed {
		return rdb.B().Hscan().Key(key).Cursor(0).Count(listHashPage).Build()
	})
	if code >= 0 {
		return code
	}
	switch typ {
	case "none":
		return -1
	case "hash":
		page, err := res.AsScanEntry()
		if err != nil && !hasCode(err, "WRONGTYPE") {
			return redisError(cmd, err)
		}
		if err != nil || lockFields(pairs(page.Elements)) {
			return -1 // gone or changed meanwhile: the script decides
		}
	}
	fmt.Fprintf(cmd.stderr, "redisync %s: %q holds a %s that is not a lock; nothing changed\n", cmd.name, name, typ)
	return exitDataErr
}

// checkName refuses names that are the side keys of primitives (a fencing counter, a fair lock's
// queue, the tool's own holder entries): using one as a lock, semaphore or latch would change data
// that belongs to another object.
func checkName(name string) error {
	for _, p := range []string{"redisson_", "redisync_"} {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%q is in the %s* namespace of the keys that primitives keep beside their name; choose another name", name, p)
		}
	}
	if strings.HasPrefix(name, "{") && (strings.HasSuffix(name, layout.Expirable.Permits) || strings.Contains(name, layout.RWLock.LeaseInfix)) {
		return fmt.Errorf("%q is the form of a primitive's side key; choose another name", name)
	}
	return nil
}

// locker is what rlock, fairlock and both sides of rwlock have in common.
type locker interface {
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
}

func lockHolder(c *redisync.Client, name string, l locker) holder {
	return holder{
		what: "lock",
		name: name,
		owner: func(held context.Context) string {
			id, _ := redisync.OwnerID(held)
			return c.ID() + ":" + strconv.FormatInt(id, 10)
		},
		acquire: func(ctx context.Context, wait time.Duration) (context.Context, error) {
			if wait < 0 {
				return l.Lock(ctx)
			}
			return l.TryLock(ctx, wait)
		},
		release: l.Unlock,
	}
}
