package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

const semaphoreHeader = `Usage: redisync semaphore [flags] --permits N NAME -- COMMAND [ARGS...]
       redisync semaphore --update --permits N | --add-permits N [--json] NAME

Runs COMMAND while holding one permit of the semaphore NAME, which has N permits: at most N
processes run their COMMAND at once, on every machine that uses the same Redis. --permits sets the
number of permits when the semaphore does not exist yet; an existing one keeps its own, and the
tool says so when that is not N (--update changes it).

The permit is one of Redisson's permit-expirable semaphore (getPermitExpirableSemaphore), so a
process that dies cannot keep it: with --lease the permit expires at the end of the lease, and
COMMAND is stopped if it still runs; without it, the permit's lease is --watchdog, renewed while
COMMAND runs, and a killed tool's permit comes back within it.

With --update, nothing runs: --permits N makes N the number of permits in all, for every process
that uses NAME (Redisson's setPermits); the permits acquired stay acquired, so the available ones
become N minus them, below zero until enough are released. --add-permits N adds N (a negative N
removes them; Redisson's addPermits). Waiters are woken when the count allows. A NAME without
permits set is left unset (status 1). It prints the permits in all, available and acquired.

Signals, process group and exit statuses are those of 'redisync lock'.
Flags go before NAME, or anywhere before "--".
`

const semaphoreFooter = heldExitStatus + `  0, 1            --update: the permits were changed; NAME has no permits set (nothing was changed)

Examples:
  redisync semaphore --permits 3 transcode -- ffmpeg -i in.mov out.mp4
  redisync semaphore --permits 10 --wait 5m --lease 1h api-quota -- ./sync.sh
  redisync semaphore --update --permits 5 transcode        # 5 at once from now on
  redisync semaphore --update --add-permits -1 transcode   # one fewer
`

// cmdSemaphore runs COMMAND holding one permit of a semaphore, or changes its permits (--update).
func cmdSemaphore(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("semaphore", semaphoreHeader, semaphoreFooter, stdout, stderr)
	var f lockFlags
	f.register(cmd, "acquired", "the permit expires after `DURATION` and COMMAND is stopped (default: renewed while COMMAND runs)")
	permits := cmd.fs.Int64("permits", 0, "`N` permits in all, set when the semaphore does not exist yet (required); with --update, its new number")
	add := cmd.fs.Int64("add-permits", 0, "with --update: add `N` permits (negative: remove them)")
	update := cmd.fs.Bool("update", false, "change the permits of the existing semaphore NAME in place (--permits or --add-permits); no COMMAND")
	asJSON := cmd.fs.Bool("json", false, "with --update: print {\"name\", \"permits\", \"available\", \"acquired\"}")
	pos, tail, hasTail, code := cmd.parse(args, 1)
	if code >= 0 {
		return code
	}
	if *update {
		name, setting, code := semaphoreUpdateArgs(cmd, &f, pos, tail, hasTail, permits, add)
		if code >= 0 {
			return code
		}
		return semaphoreUpdate(cmd, &f.conn, name, setting, *permits, *add, *asJSON)
	}
	switch {
	case visited(cmd)["add-permits"]:
		return cmd.usageError("--add-permits goes with --update")
	case *asJSON:
		return cmd.usageError("--json goes with --update: a run prints nothing of its own")
	}
	name, argv, code := heldArgs(cmd, pos, tail, &f.waitFlags)
	switch {
	case code >= 0:
		return code
	case *f.watchdog < 30*time.Millisecond:
		return cmd.usageError("--watchdog %v is too short: at least 30ms", *f.watchdog)
	case *permits < 1:
		return cmd.usageError("--permits must be at least 1")
	}
	start := time.Now()
	c, code := f.conn.connect(cmd, f.budget())
	if code >= 0 {
		return code
	}
	defer c.Close()
	lease, renew := *f.lease, time.Duration(0)
	if lease == 0 {
		lease, renew = *f.watchdog, *f.watchdog
	}
	e, err := semaphore.NewExpirable(c, name, semaphore.WithLease(lease))
	if err != nil {
		return cmd.usageError("%v", err)
	}
	ctx, cancel := f.before(start)
	err = trySetPermits(ctx, cmd, e, name, *permits)
	cancel()
	if err != nil {
		return redisError(cmd, err)
	}
	p := &permitHold{e: e, lease: lease, renew: renew}
	h := holder{what: "permit", name: name, acquire: p.acquire, release: p.release,
		owner: func(context.Context) string { return p.id }}
	return runHeld(cmd, c, h, f.options(start), argv)
}

// trySetPermits sets the permits of e, called name, when it does not exist yet. An existing
// semaphore keeps its permits: it says so when they are not the ones asked for.
func trySetPermits(ctx context.Context, cmd *command, e *semaphore.Expirable, name string, permits int64) error {
	set, err := e.TrySetPermits(ctx, permits)
	if err != nil || set {
		return err
	}
	n, err := e.Permits(ctx)
	if err == nil && n != permits {
		cmd.say("%q has %d permits, not the %d of --permits, which sets them only when the semaphore does not exist yet ('redisync semaphore --update --permits %d %s' changes them)",
			name, n, permits, permits, name)
	}
	return err
}

// visited returns the flags of cmd that were given.
func visited(cmd *command) map[string]bool {
	set := map[string]bool{}
	cmd.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// semaphoreUpdateArgs checks the arguments of --update, reading the flags that follow NAME into f,
// n (--permits) and add (--add-permits), and returns NAME and whether --permits (setting, not adding)
// was given. A code >= 0 is an exit status.
func semaphoreUpdateArgs(cmd *command, f *lockFlags, pos, tail []string, hasTail bool, n, add *int64) (name string, setting bool, code int) {
	if !hasTail && len(tail) > 0 { // flags after NAME
		var more []string
		if more, tail, hasTail, code = cmd.parse(tail, 0); code >= 0 {
			return "", false, code
		}
		pos = append(pos, more...)
	}
	set := visited(cmd)
	switch {
	case hasTail || len(tail) > 0:
		return "", false, cmd.usageError("--update runs no COMMAND")
	case set["permits"] == set["add-permits"]:
		return "", false, cmd.usageError("--update takes --permits N or --add-permits N")
	case set["add-permits"] && *add == 0:
		return "", false, cmd.usageError("--add-permits 0 changes nothing")
	case set["permits"] && *n < 0:
		return "", false, cmd.usageError("--permits must be at least 0")
	case f.waitFlags.given(cmd) || set["lease"] || set["grace"] || set["watchdog"] || set["record-command"]:
		return "", false, cmd.usageError("--wait, -n, -E, --lease, --grace, --watchdog and --record-command go with acquiring a permit, not with --update")
	case len(pos) == 0:
		return "", false, cmd.usageError("missing NAME")
	case len(pos) > 1:
		return "", false, cmd.usageError("unexpected argument %q: --update takes NAME only", pos[1])
	case pos[0] == "":
		return "", false, cmd.usageError("empty NAME")
	}
	if err := checkName(pos[0]); err != nil {
		return "", false, cmd.usageError("%v", err)
	}
	return pos[0], set["permits"], -1
}

// semaphoreUpdate makes n the permits of the semaphore name (setting), or adds add to them, and
// prints the permits it has then.
func semaphoreUpdate(cmd *command, conn *connFlags, name string, setting bool, n, add int64, asJSON bool) int {
	c, code := conn.connect(cmd, -1)
	if code >= 0 {
		return code
	}
	defer c.Close()
	e, err := semaphore.NewExpirable(c, name)
	if err != nil {
		return cmd.usageError("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if code := checkSemaphoreKey(ctx, cmd, c, name); code >= 0 {
		return code
	}
	if setting {
		err = e.SetPermits(ctx, n)
	} else {
		err = e.AddPermits(ctx, add)
	}
	if err != nil {
		return redisError(cmd, err)
	}
	avail, err := e.Available(ctx)
	if err != nil {
		return redisError(cmd, err)
	}
	acquired, err := e.Acquired(ctx)
	if err != nil {
		return redisError(cmd, err)
	}
	if asJSON {
		printJSON(cmd.stdout, struct {
			Name      string `json:"name"`
			Permits   int64  `json:"permits"`
			Available int64  `json:"available"`
			Acquired  int64  `json:"acquired"`
		}{name, avail + acquired, avail, acquired})
	} else {
		fmt.Fprintf(cmd.stdout, "%s: %d permits (%d available, %d acquired)\n", name, avail+acquired, avail, acquired)
	}
	return exitOK
}

// checkSemaphoreKey returns an exit status unless name is a semaphore already: an update never
// creates one, so that a mistyped name leaves nothing behind, and never writes into other data.
func checkSemaphoreKey(ctx context.Context, cmd *command, c *redisync.Client, name string) int {
	typ, res, code := keyType(ctx, cmd, c, name, getNumber)
	if code >= 0 {
		return code
	}
	v, verr := res.ToString()
	if _, ok := number(v, verr == nil); typ != "none" && (typ != "string" || !ok) {
		fmt.Fprintf(cmd.stderr, "redisync semaphore: %q holds a %s that is not a semaphore; nothing changed\n", name, typ)
		return exitDataErr
	}
	if typ == "none" {
		cmd.say("%q has no permits set; nothing was changed (a run with --permits and COMMAND sets them)", name)
		return exitFailure
	}
	return -1
}

// permitHold is one permit held while COMMAND runs. Its ctx ends with redisync.ErrLost when the
// permit's lease ends (a fixed lease) or when a renewal finds it gone or cannot be sure it still is.
type permitHold struct {
	e     *semaphore.Expirable
	lease time.Duration
	renew time.Duration // > 0: renew the lease every third of it

	id     string
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
}

func (p *permitHold) acquire(ctx context.Context, wait time.Duration) (context.Context, error) {
	start := time.Now()
	var ids []string
	var err error
	if wait < 0 {
		ids, err = p.e.Acquire(ctx, 1)
	} else {
		ids, err = p.e.TryAcquire(ctx, 1, wait)
	}
	if err != nil {
		return nil, err
	}
	p.id = ids[0]
	// The lease runs from no later than the start of the acquisition, by this machine's clock.
	held, cancel := context.WithCancelCause(context.Background())
	p.cancel = cancel
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.keep(held, start.Add(p.lease))
	return held, nil
}

// keep ends the hold when its lease may have ended: at the fixed lease's end, or, when renewing,
// when no renewal has succeeded for a whole lease or one finds the permit gone.
func (p *permitHold) keep(held context.Context, valid time.Time) {
	defer close(p.done)
	var tick <-chan time.Time
	if p.renew > 0 {
		t := time.NewTicker(p.renew / 3)
		defer t.Stop()
		tick = t.C
	}
	expiry := time.NewTimer(time.Until(valid))
	defer expiry.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-expiry.C:
			if p.renew > 0 {
				p.cancel(fmt.Errorf("%w: the permit's renewal failed until its lease may have ended", redisync.ErrLost))
			} else {
				p.cancel(fmt.Errorf("%w: lease of %v ended", redisync.ErrLost, p.lease))
			}
			return
		case <-tick:
			sent := time.Now()
			ctx, cancel := context.WithTimeout(held, p.renew/3)
			err := p.e.UpdateLease(ctx, p.id, p.renew)
			cancel()
			switch {
			case err == nil:
				expiry.Reset(time.Until(sent.Add(p.renew)))
			case errors.Is(err, redisync.ErrNotHeld):
				p.cancel(fmt.Errorf("%w: renewal found the permit gone", redisync.ErrLost))
				return
			}
			// Another error: try again at the next tick; the expiry timer decides.
		}
	}
}

func (p *permitHold) release(held context.Context) error {
	close(p.stop)
	<-p.done
	err := p.e.Release(context.WithoutCancel(held), p.id)
	p.cancel(redisync.ErrReleased)
	return err
}
