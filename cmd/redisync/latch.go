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
	"github.com/redisync/redisync/internal/core"
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
	if len(pos) < 2 {
		return cmd.usageError("want NAME and one of set N, countdown, count, await")
	}
	name, verb, rest := pos[0], pos[1], pos[2:]
	var n int64
	switch {
	case verb == "set" && len(rest) == 1:
		var err error
		if n, err = strconv.ParseInt(rest[0], 10, 64); err != nil || n < 1 {
			return cmd.usageError("set: N must be a whole number of at least 1, not %q", rest[0])
		}
	case verb == "set":
		return cmd.usageError("set takes one count N")
	case verb != "countdown" && verb != "count" && verb != "await":
		return cmd.usageError("unknown latch operation %q", verb)
	case len(rest) > 0:
		return cmd.usageError("%s takes no argument, got %q", verb, rest[0])
	}
	if verb != "await" && w.given(cmd) {
		return cmd.usageError("--wait, -n and -E go with await only")
	}
	if code := w.check(cmd); code >= 0 {
		return code
	}
	if name == "" {
		return cmd.usageError("empty NAME")
	}
	if err := checkName(name); err != nil {
		return cmd.usageError("%v", err)
	}

	start := time.Now()
	c, code := conn.connect(cmd, w.budget())
	if code >= 0 {
		return code
	}
	defer c.Close()
	l, err := countdown.New(c, name)
	if err != nil {
		return cmd.usageError("%v", err)
	}
	ctx := context.Background()
	fail := func(err error) int { return redisError(cmd, err) }
	// A key of another kind under NAME is refused before anything is written: the latch's scripts
	// would treat an application's number as a count. (countdown's own script refuses what is not
	// a positive whole number, atomically; this says so before set and await too.)
	checkCtx, cancel := w.before(start)
	code = checkLatchKey(checkCtx, cmd, c, name)
	cancel()
	if code >= 0 {
		return code
	}
	switch verb {
	case "set":
		ok, err := l.TrySetCount(ctx, n)
		if err != nil {
			return fail(err)
		}
		if !ok {
			count, _ := l.Count(ctx)
			cmd.say("%q is still counting down (count %d); not set", name, count)
			return exitFailure
		}
	case "countdown":
		if err := l.CountDown(ctx); err != nil {
			return fail(err)
		}
	case "count":
		count, err := l.Count(ctx)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			printJSON(stdout, struct {
				Name  string `json:"name"`
				Count int64  `json:"count"`
			}{name, count})
		} else {
			fmt.Fprintln(stdout, count)
		}
	case "await":
		if !w.wait.set {
			err = l.Await(ctx)
		} else {
			if err = l.TryAwait(ctx, max(0, w.wait.d-time.Since(start))); errors.Is(err, redisync.ErrNotAcquired) {
				count, _ := l.Count(ctx)
				return w.notAcquired(cmd, "%q still at count %d after %v", name, count, w.wait.d)
			}
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return fail(err)
		}
	}
	return exitOK
}

// checkLatchKey returns exitDataErr, with a message naming the key's type but never its content,
// when name holds something other than a latch's count: a whole number above zero.
func checkLatchKey(ctx context.Context, cmd *command, c *redisync.Client, name string) int {
	rdb := c.Redis()
	key, _ := core.Of(c).Name("", name)
	res := rdb.DoMulti(ctx, rdb.B().Type().Key(key).Build(), getNumber(rdb, key))
	typ, err := res[0].ToString()
	if err != nil {
		return redisError(cmd, err)
	}
	switch typ {
	case "none":
		return -1
	case "string":
		v, err := res[1].ToString()
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
