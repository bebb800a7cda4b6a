package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/ratelimit"
)

const rateHeader = `Usage: redisync rate [flags] --rate N/INTERVAL NAME -- COMMAND [ARGS...]
       redisync rate --update --rate N/INTERVAL [--keep-alive DURATION] [--json] NAME

Takes one permit of the rate limiter NAME, waiting until the limiter has one, then runs COMMAND: of
all the processes that run 'redisync rate NAME' against the same Redis, at most N start their
COMMAND in any INTERVAL (a sliding window, kept by the Redis server's clock). The limiter is
Redisson's RRateLimiter (getRateLimiter("NAME")), so Java services draw from the same rate. --rate
sets the rate when the limiter has none; an existing one keeps its own, and the tool says so when
that is not N/INTERVAL (--update changes it).

The permit is not held: COMMAND runs as long as it takes, and how many run at once is not bounded
(combine with 'redisync semaphore' for that). Signals and process group are those of 'redisync lock'.
Flags go before NAME, or anywhere before "--".

With --update, nothing runs: the rate of the existing limiter NAME becomes N per INTERVAL in place
(Redisson's updateRate with keepState), for every process that uses it. The grants made within the
new INTERVAL stay in the window and count against the new rate: the permits left become N minus
them (0 when they hold more), so a rate raised gives its new permits at once, and one lowered below
what was just granted gives none until grants leave the window. The limiter keeps its type and, unless
--keep-alive is given, its keep-alive. A per-client limiter's windows are each client's: they are
left as they are. A NAME without a rate is left unset (status 1).
`

const rateFooter = `
Exit status:
  COMMAND's own   COMMAND ran (128+n when a signal n ended it)
  0               --update: the rate was changed
  1               --update: NAME has no rate; nothing was changed
  75              no permit within --wait; COMMAND did not run (-E chooses another status)
  64              bad flags or arguments
  65              NAME holds data of another kind (not a rate limiter); COMMAND did not run
  69              Redis unreachable or failing; COMMAND did not run
  77              Redis refused: NOPERM (see docs/cli.md's minimal ACL), wrong user or password
  126, 127        COMMAND cannot be run, or was not found
  128+n           signal n arrived while waiting; COMMAND did not run

Examples:
  redisync rate --rate 10/s api -- curl -fsS https://api.example.com/sync
  redisync rate --rate 10000/h -n mail -- ./send.sh          # exit 75 at once when over the rate
  redisync rate --rate 5/250ms --keep-alive 1h crawl -- ./fetch.sh "$URL"
  redisync rate --update --rate 20/s api                    # raise api's rate in place
`

// rateFlag is a --rate N/INTERVAL: "10/s", "100/1m", "5/250ms".
type rateFlag struct {
	n        int64
	interval time.Duration
}

func (r *rateFlag) String() string {
	if r == nil || r.n == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%v", r.n, r.interval)
}

func (r *rateFlag) Set(s string) error {
	count, per, ok := strings.Cut(s, "/")
	if !ok {
		return errors.New("want N/INTERVAL, as 10/s or 100/1m")
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n < 1 {
		return fmt.Errorf("%q: want a count of at least 1", count)
	}
	d, err := time.ParseDuration(per)
	if err != nil {
		d, err = time.ParseDuration("1" + per) // a bare unit: "s" is "1s"
	}
	if err != nil || d < time.Millisecond {
		return fmt.Errorf("%q: want an interval of at least 1ms, as s, 1m or 250ms", per)
	}
	r.n, r.interval = n, d
	return nil
}

// cmdRate runs COMMAND once the rate limiter grants a permit, or changes the rate (--update).
func cmdRate(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("rate", rateHeader, rateFooter, stdout, stderr)
	var rate rateFlag
	var w waitFlags
	var conn connFlags
	cmd.fs.Var(&rate, "rate", "`N/INTERVAL`: N permits per INTERVAL, set when the limiter has no rate yet; with --update, its new rate (required)")
	w.register(cmd, "granted a permit")
	keepAlive := durationFlag(cmd.fs, "keep-alive", 0, "with a new limiter, or --update: it leaves Redis after `DURATION` without use, at least INTERVAL (default: it stays;\nwith --update, it keeps its own)")
	asJSON := cmd.fs.Bool("json", false, "with --update: print {\"name\", \"type\", \"rate\", \"interval_ms\", \"keep_alive_ms\", \"available\"}")
	update := cmd.fs.Bool("update", false, "change the rate of the existing limiter NAME to --rate in place, keeping the grants in its window;\nno COMMAND")
	conn.register(cmd.fs)
	pos, tail, hasTail, code := cmd.parse(args, 1)
	if code >= 0 {
		return code
	}
	if *update {
		if !hasTail && len(tail) > 0 { // flags after NAME
			var more []string
			if more, tail, hasTail, code = cmd.parse(tail, 0); code >= 0 {
				return code
			}
			pos = append(pos, more...)
		}
		return rateUpdate(cmd, &conn, pos, hasTail || len(tail) > 0, rate, *keepAlive, *asJSON)
	}
	if *asJSON {
		return cmd.usageError("--json goes with --update: a run prints nothing of its own")
	}
	name, argv, code := heldArgs(cmd, pos, tail, &w)
	switch {
	case code >= 0:
		return code
	case rate.n == 0:
		return cmd.usageError("--rate is required")
	case *keepAlive != 0 && *keepAlive < rate.interval:
		return cmd.usageError("--keep-alive %v is shorter than the interval %v", *keepAlive, rate.interval)
	}
	start := time.Now()
	c, l, code := openLimiter(cmd, &conn, &w, name)
	if code >= 0 {
		return code
	}
	defer c.Close()
	ctx, cancel := w.before(start)
	code = trySetRate(ctx, cmd, l, name, rate, *keepAlive)
	cancel()
	if code >= 0 {
		return code
	}
	o := heldOptions{wait: w.wait.bound(), start: start, grace: 10 * time.Second, waits: &w}
	return runHeld(cmd, c, permitHolder(l, name), o, argv)
}

// openLimiter connects within w's budget and returns the limiter called name, or an exit status
// (>= 0); the caller closes c.
func openLimiter(cmd *command, conn *connFlags, w *waitFlags, name string) (c *redisync.Client, l *ratelimit.Limiter, code int) {
	c, code = conn.connect(cmd, w.budget())
	if code >= 0 {
		return nil, nil, code
	}
	l, err := ratelimit.New(c, name)
	if err != nil {
		c.Close()
		return nil, nil, cmd.usageError("%v", err)
	}
	return c, l, -1
}

// permitHolder takes one permit of the limiter l, called name, for COMMAND: nothing is given back.
func permitHolder(l *ratelimit.Limiter, name string) holder {
	take := func(ctx context.Context, wait time.Duration) (context.Context, error) {
		if wait < 0 {
			return context.Background(), l.Acquire(ctx, 1)
		}
		return context.Background(), l.TryAcquire(ctx, 1, wait)
	}
	return holder{what: "permit", name: name, acquire: take, release: func(context.Context) error { return nil }}
}

// trySetRate sets the rate of l when it has none. An existing limiter keeps its rate: it says so
// when that is not the one asked for. A code >= 0 is an exit status.
func trySetRate(ctx context.Context, cmd *command, l *ratelimit.Limiter, name string, rate rateFlag, keepAlive time.Duration) int {
	set, err := l.TrySetRate(ctx, ratelimit.Config{Rate: rate.n, Interval: rate.interval, KeepAlive: keepAlive})
	switch {
	case errors.Is(err, redisync.ErrInvalidArgument):
		return cmd.usageError("%v", err)
	case err != nil:
		return redisError(cmd, err)
	case set:
		return -1
	}
	if cur, err := l.Config(ctx); err == nil && (cur.Rate != rate.n || cur.Interval != rate.interval) {
		cmd.say("%q has a rate of %d per %v, not the %v of --rate, which sets it only when the limiter has none ('redisync rate --update --rate %v %s' changes it)",
			name, cur.Rate, cur.Interval, &rate, &rate, name)
	}
	return -1
}

// rateUpdate changes the rate of the limiter pos[0] in place (--update), keeping its window, its
// type and, without --keep-alive, its keep-alive. An Overall limiter keeps its window (KeepState); a
// PerClient one is updated without, so that the tool, which has no window of its own, makes none.
func rateUpdate(cmd *command, conn *connFlags, pos []string, command bool, rate rateFlag, keepAlive time.Duration, asJSON bool) int {
	setKeepAlive := visited(cmd)["keep-alive"]
	switch {
	case command:
		return cmd.usageError("--update runs no COMMAND")
	case len(pos) == 0:
		return cmd.usageError("missing NAME")
	case len(pos) > 1:
		return cmd.usageError("unexpected argument %q: --update takes NAME only", pos[1])
	case pos[0] == "":
		return cmd.usageError("empty NAME")
	case rate.n == 0:
		return cmd.usageError("--rate is required")
	case (&waitFlags{}).given(cmd):
		return cmd.usageError("--wait, -n and -E go with acquiring a permit, not with --update")
	case setKeepAlive && keepAlive != 0 && keepAlive < rate.interval:
		return cmd.usageError("--keep-alive %v is shorter than the interval %v", keepAlive, rate.interval)
	}
	name := pos[0]
	if err := checkName(name); err != nil {
		return cmd.usageError("%v", err)
	}
	var w waitFlags
	start := time.Now()
	c, l, code := openLimiter(cmd, conn, &w, name)
	if code >= 0 {
		return code
	}
	defer c.Close()
	ctx, cancel := w.before(start)
	defer cancel()
	cfg, code := updateRate(ctx, cmd, l, name, rate, keepAlive, setKeepAlive)
	if code >= 0 {
		return code
	}
	var left *int64
	if cfg.Type == ratelimit.Overall {
		if n, err := l.Available(ctx); err == nil {
			left = &n
		}
	}
	printRate(cmd, name, cfg, left, asJSON)
	return exitOK
}

// updateRate gives l the rate asked for, keeping its type and, unless setKeepAlive, its keep-alive,
// and returns its new settings. A code >= 0 is an exit status.
func updateRate(ctx context.Context, cmd *command, l *ratelimit.Limiter, name string, rate rateFlag, keepAlive time.Duration, setKeepAlive bool) (ratelimit.Config, int) {
	unset := func() int {
		cmd.say("%q has no rate; nothing was changed (a run with --rate and COMMAND sets one)", name)
		return exitFailure
	}
	cur, err := l.Config(ctx)
	switch {
	case errors.Is(err, redisync.ErrNotInitialized):
		return cur, unset()
	case err != nil:
		return cur, redisError(cmd, err)
	}
	cfg := ratelimit.Config{Type: cur.Type, Rate: rate.n, Interval: rate.interval, KeepAlive: cur.KeepAlive}
	if setKeepAlive {
		cfg.KeepAlive = keepAlive
	}
	var opts []ratelimit.SetOption
	if cfg.Type == ratelimit.Overall {
		opts = append(opts, ratelimit.KeepState())
	}
	ok, err := l.UpdateRate(ctx, cfg, opts...)
	switch {
	case errors.Is(err, redisync.ErrInvalidArgument):
		return cfg, cmd.usageError("%v", err)
	case err != nil:
		return cfg, redisError(cmd, err)
	case !ok:
		return cfg, unset()
	}
	return cfg, -1
}

// printRate writes the limiter's new settings, and an Overall limiter's permits left.
func printRate(cmd *command, name string, cfg ratelimit.Config, left *int64, asJSON bool) {
	if asJSON {
		printJSON(cmd.stdout, struct {
			Name        string `json:"name"`
			Type        string `json:"type"`
			Rate        int64  `json:"rate"`
			IntervalMs  int64  `json:"interval_ms"`
			KeepAliveMs int64  `json:"keep_alive_ms,omitempty"`
			Available   *int64 `json:"available,omitempty"` // an overall limiter's permits left
		}{name, cfg.Type.String(), cfg.Rate, cfg.Interval.Milliseconds(), cfg.KeepAlive.Milliseconds(), left})
		return
	}
	fmt.Fprintf(cmd.stdout, "%s: %d per %v (%s)", name, cfg.Rate, cfg.Interval, cfg.Type)
	if left != nil {
		fmt.Fprintf(cmd.stdout, ", %d permits left", *left)
	}
	fmt.Fprintln(cmd.stdout)
}

// rateState is what inspect shows of a rate limiter.
type rateState struct {
	Type        string `json:"type"` // "overall" or "per client"
	Rate        int64  `json:"rate"`
	IntervalMs  int64  `json:"interval_ms"`
	KeepAliveMs int64  `json:"keep_alive_ms,omitempty"`
	// Available: the permits an acquisition could take now (overall limiters: a per-client one has a
	// window for each client).
	Available *int64 `json:"available,omitempty"`
	Grants    int    `json:"grants,omitempty"` // the grants in the window now
}

// rateFields reports whether a hash's fields are a rate limiter's, and its rate, interval and type.
func rateFields(f map[string]string) (rate, interval int64, perClient, ok bool) {
	rate, err1 := strconv.ParseInt(f[layout.RateLimiter.Rate], 10, 64)
	interval, err2 := strconv.ParseInt(f[layout.RateLimiter.Interval], 10, 64)
	typ, overall, each := f[layout.RateLimiter.Type], strconv.Itoa(int(ratelimit.Overall)), strconv.Itoa(int(ratelimit.PerClient))
	if err1 != nil || err2 != nil || (typ != overall && typ != each) {
		return 0, 0, false, false
	}
	return rate, interval, typ == each, true
}

// rateLimiter reads the rate limiter under st.Name, if the hash fields there are one, the way an
// acquisition would count its window, without changing it. It reads at most maxGrants grants, the
// oldest first: those that left the window come first; the others are counted, as one permit each
// beyond that bound.
func (r *reader) rateLimiter(st *state, f map[string]string, now int64) bool {
	rate, interval, perClient, ok := rateFields(f)
	if !ok {
		return false
	}
	rs := &rateState{Type: ratelimit.Overall.String(), Rate: rate, IntervalMs: interval}
	rs.KeepAliveMs, _ = strconv.ParseInt(f[layout.RateLimiter.KeepAlive], 10, 64)
	st.Kind, st.RateLimiter = "rate limiter", rs
	if perClient {
		rs.Type = ratelimit.PerClient.String()
		return true
	}
	valueKey, permitsKey := r.key(layout.RateLimiter.Value, st.Name), r.key(layout.RateLimiter.Permits, st.Name)
	var q batch
	value := q.add(getNumber(r.rdb, valueKey))
	inWindow := q.add(r.rdb.B().Zcount().Key(permitsKey).Min("(" + strconv.FormatInt(now-interval, 10)).Max("+inf").Build())
	grants := q.add(firstOf(r.rdb, permitsKey, maxGrants))
	q.send(r)
	left, ok := number(q.str(value))
	if !r.found(st, valueKey, ok) {
		rs.Available = &rate // no window yet: all of it
		return true
	}
	var released, used, seen int64
	zs := q.zset(grants)
	r.found(st, permitsKey, len(zs) > 0)
	for _, z := range zs {
		p := grantPermits(z.Member)
		if int64(z.Score) <= now-interval {
			released += p
		} else {
			used += p
			seen++
		}
	}
	rs.Grants = int(q.int(inWindow))
	used += int64(rs.Grants) - seen
	// Redisson's rule: returned permits never take the window above the rate.
	if released > 0 {
		if left += released; left > rate {
			left = rate - used
		}
	}
	rs.Available = &left
	return true
}

// grantPermits decodes a grant, struct.pack('Bc0I', #id, id, permits): 0 when malformed.
func grantPermits(member string) int64 {
	if len(member) < 1 || len(member) < 1+int(member[0])+4 {
		return 0
	}
	at := 1 + int(member[0])
	return int64(binary.LittleEndian.Uint32([]byte(member[at : at+4])))
}

func (rs *rateState) print(w io.Writer) {
	if rs == nil {
		return
	}
	fmt.Fprintf(w, "  rate: %d per %v (%s)", rs.Rate, ms(rs.IntervalMs), rs.Type)
	if rs.KeepAliveMs > 0 {
		fmt.Fprintf(w, ", kept %v after its last use", ms(rs.KeepAliveMs))
	}
	fmt.Fprintln(w)
	if rs.Available == nil {
		fmt.Fprintln(w, "  permits left: counted per client, in each client's window")
		return
	}
	fmt.Fprintf(w, "  permits left: %d (%d grants in the window)\n", *rs.Available, rs.Grants)
}
