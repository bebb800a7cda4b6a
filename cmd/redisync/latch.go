package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
)

const latchHeader = `Usage: redisync latch [flags] NAME set N | countdown | count [--json] | await [-w DURATION | -n] [-E STATUS]

A countdown latch (Redisson's getCountDownLatch): processes wait until others have counted it down
to zero. A latch that was never set, or reached zero, has count 0 and lets every await through.

  set N       arm the latch with count N, if its count is 0; exit 1 if it is still counting down
  countdown   lower the count by one; at zero, every waiter on every machine goes on
  count       print the count (--json: as JSON)
  await       wait until the count is 0; with --wait (-w), exit 75 if it is not 0 by then (-E
              chooses another status: -E 0 goes on quietly); -n only checks
Flags go anywhere: before NAME, or after the operation.
`

const latchFooter = `
Exit status: 0; 1 when set finds the latch still counting down; 75 (or -E's) when await's --wait
passes; 64 for bad arguments; 65 when NAME holds something that is not a latch (nothing is changed);
69 when Redis is unreachable or failing; 77 when Redis refuses (NOPERM).

Examples:
  redisync latch shards-ready set 8
  redisync latch shards-ready countdown                     # in each of 8 jobs, when its shard is ready
  redisync latch shards-ready await --wait 30m && ./merge.sh
`

// cmdLatch sets, counts down, reads or awaits a countdown latch.
func cmdLatch(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("latch", latchHeader, latchFooter, stdout, stderr)
	var w waitFlags
	w.register(cmd, "open (await)")
	asJSON := cmd.fs.Bool("json", false, "count: print {\"name\": NAME, \"count\": N}")
	var conn connFlags
	conn.register(cmd.fs)
	pos, _, _, code := cmd.parse(args, 0)
	if code >= 0 {
		return code
	}
	op, code := parseLatchOp(cmd, pos, &w)
	if code >= 0 {
		return code
	}
	start := time.Now()
	c, code := conn.connect(cmd, w.budget())
	if code >= 0 {
		return code
	}
	defer c.Close()
	l, err := countdown.New(c, op.name)
	if err != nil {
		return cmd.usageError("%v", err)
	}
	// A key of another kind under NAME is refused before anything is written: the latch's scripts
	// would treat an application's number as a count. (countdown's own script refuses what is not
	// a positive whole number, atomically; this says so before set and await too.)
	checkCtx, cancel := w.before(start)
	code = checkLatchKey(checkCtx, cmd, c, op.name)
	cancel()
	if code >= 0 {
		return code
	}
	return op.run(cmd, l, &w, start, *asJSON)
}

// latchOp is what 'redisync latch' was asked to do: verb (set, countdown, count, await) on the latch
// name, n being set's count.
type latchOp struct {
	name, verb string
	n          int64
}

// parseLatchOp reads the operation from the positional arguments, and checks that the flags go with
// it; code >= 0 is an exit status.
func parseLatchOp(cmd *command, pos []string, w *waitFlags) (op latchOp, code int) {
	if len(pos) < 2 {
		return op, cmd.usageError("want NAME and one of set N, countdown, count, await")
	}
	op.name, op.verb = pos[0], pos[1]
	rest := pos[2:]
	switch {
	case op.verb == "set" && len(rest) == 1:
		var err error
		if op.n, err = strconv.ParseInt(rest[0], 10, 64); err != nil || op.n < 1 {
			return op, cmd.usageError("set: N must be a whole number of at least 1, not %q", rest[0])
		}
	case op.verb == "set":
		return op, cmd.usageError("set takes one count N")
	case op.verb != "countdown" && op.verb != "count" && op.verb != "await":
		return op, cmd.usageError("unknown latch operation %q", op.verb)
	case len(rest) > 0:
		return op, cmd.usageError("%s takes no argument, got %q", op.verb, rest[0])
	}
	if op.verb != "await" && w.given(cmd) {
		return op, cmd.usageError("--wait, -n and -E go with await only")
	}
	if code := w.check(cmd); code >= 0 {
		return op, code
	}
	if op.name == "" {
		return op, cmd.usageError("empty NAME")
	}
	if err := checkName(op.name); err != nil {
		return op, cmd.usageError("%v", err)
	}
	return op, -1
}

// run does op on l, the command having started at start.
func (op latchOp) run(cmd *command, l *countdown.Latch, w *waitFlags, start time.Time, asJSON bool) int {
	ctx := context.Background()
	var err error
	switch op.verb {
	case "set":
		var ok bool
		if ok, err = l.TrySetCount(ctx, op.n); err == nil && !ok {
			count, _ := l.Count(ctx)
			cmd.say("%q is still counting down (count %d); not set", op.name, count)
			return exitFailure
		}
	case "countdown":
		err = l.CountDown(ctx)
	case "count":
		var count int64
		if count, err = l.Count(ctx); err != nil {
			break
		}
		if asJSON {
			printJSON(cmd.stdout, struct {
				Name  string `json:"name"`
				Count int64  `json:"count"`
			}{op.name, count})
		} else {
			fmt.Fprintln(cmd.stdout, count)
		}
	case "await":
		if !w.wait.set {
			err = l.Await(ctx)
		} else if err = l.TryAwait(ctx, max(0, w.wait.d-time.Since(start))); errors.Is(err, redisync.ErrNotAcquired) {
			count, _ := l.Count(ctx)
			return w.notAcquired(cmd, "%q still at count %d after %v", op.name, count, w.wait.d)
		}
	}
	if err != nil && (op.verb != "await" || !errors.Is(err, context.Canceled)) {
		return redisError(cmd, err)
	}
	return exitOK
}

// checkLatchKey returns exitDataErr, with a message naming the key's type but never its content,
// when name holds something other than a latch's count: a whole number above zero.
func checkLatchKey(ctx context.Context, cmd *command, c *redisync.Client, name string) int {
	typ, res, code := keyType(ctx, cmd, c, name, getNumber)
	if code >= 0 {
		return code
	}
	switch typ {
	case "none":
		return -1
	case "string":
		v, err := res.ToString()
		if err != nil && !rueidis.IsRedisNil(err) && !hasCode(err, "WRONGTYPE") {
			return redisError(cmd, err)
		}
		if err != nil {
			return -1 // gone or changed meanwhile: the script decides
		}
		if n, ok := number(v, true); ok && n > 0 && strconv.FormatInt(n, 10) == v {
			return -1
		}
	}
	fmt.Fprintf(cmd.stderr, "redisync latch: %q holds a %s that is not a countdown latch; nothing changed\n", name, typ)
	return exitDataErr
}
