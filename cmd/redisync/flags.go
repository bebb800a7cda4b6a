package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"
)

// command is one subcommand's flag set with its help text.
type command struct {
	fs     *flag.FlagSet
	name   string
	header string // usage line and description, printed before the flags
	footer string // exit statuses and examples, printed after them
	stdout io.Writer
	stderr io.Writer
	out    outFlags
}

func newCommand(name, header, footer string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet("redisync "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // help is printed by parse, to stdout when asked for
	c := &command{fs: fs, name: name, header: header, footer: footer, stdout: stdout, stderr: stderr}
	c.out.register(fs)
	return c
}

// outFlags say what the tool writes on stderr besides errors; every subcommand takes them, before
// or after its name.
type outFlags struct {
	quiet   bool
	verbose bool
}

func (o *outFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.quiet, "quiet", false, "write nothing on stderr but errors: not what the exit status already says (not acquired, a latch still\ncounting down...), nor what the tool waits for, nor warnings")
	fs.BoolVar(&o.quiet, "q", false, "short for --quiet")
	fs.BoolVar(&o.verbose, "verbose", false, "also write the library's log records (a hold lost, a renewal failed, a reconnect) on stderr,\nas lines \"redisync SUBCOMMAND: library: level=... msg=...\"; without it they are left out")
	fs.BoolVar(&o.verbose, "v", false, "short for --verbose")
}

// say writes a message that the exit status already conveys, or a warning, unless --quiet.
func (c *command) say(format string, args ...any) {
	if !c.out.quiet {
		fmt.Fprintf(c.stderr, "redisync %s: %s\n", c.name, fmt.Sprintf(format, args...))
	}
}

// logger is where the library's log records go: with --verbose, lines of the tool's on stderr;
// otherwise nowhere, since the tool reports itself what they would tell (COMMAND stopped because
// the hold was lost, a release that failed).
func (c *command) logger() *slog.Logger {
	if !c.out.verbose {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(prefixed{c.stderr, "redisync " + c.name + ": library: "}, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{} // the tool's lines have no time
			}
			return a
		},
	}))
}

// prefixed writes each write, a whole line, with a prefix.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// help writes the full help text to w.
func (c *command) help(w io.Writer) {
	fmt.Fprint(w, c.header)
	fmt.Fprintln(w, "\nFlags:")
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(c.stderr)
	fmt.Fprint(w, c.footer)
}

// parse parses flags wherever they appear among args and returns the other arguments in order.
//
// With a "--" among args, flags are parsed up to it, and what follows it is returned as tail
// (hasTail is true). Without one, parsing stops once stopAfter (> 0) arguments are collected, and the
// rest, flags or not, is the tail: "redisync lock NAME ls -l" runs "ls -l".
//
// On --help it prints the help and returns code 0; on a bad flag, exitUsage; code < 0 means go on.
func (c *command) parse(args []string, stopAfter int) (positional, tail []string, hasTail bool, code int) {
	if slices.Contains(args, "--") {
		stopAfter = 0
	}
	for len(args) > 0 {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.help(c.stdout)
				return nil, nil, false, exitOK
			}
			return nil, nil, false, c.usageError("")
		}
		rest := c.fs.Args()
		// flag.Parse stops after "--" (consumed) or before the first non-flag argument.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return positional, rest, true, -1
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
		if stopAfter > 0 && len(positional) == stopAfter {
			return positional, args, false, -1
		}
	}
	return positional, nil, false, -1
}

// parseName parses args (see parse) for a subcommand that takes one NAME, not empty, and nothing
// else, and returns it; code >= 0 is the exit status when args are not that, a usage error said.
func (c *command) parseName(args []string) (name string, code int) {
	pos, _, _, code := c.parse(args, 0)
	switch {
	case code >= 0:
		return "", code
	case len(pos) == 0:
		return "", c.usageError("missing NAME")
	case len(pos) > 1:
		return "", c.usageError("unexpected argument %q", pos[1])
	case pos[0] == "":
		return "", c.usageError("empty NAME")
	}
	return pos[0], -1
}

// usageError reports a usage error (msg, unless empty: flag has printed its own) and returns exitUsage.
func (c *command) usageError(msg string, args ...any) int {
	if msg != "" {
		fmt.Fprintf(c.stderr, "redisync %s: %s\n", c.name, fmt.Sprintf(msg, args...))
	}
	fmt.Fprintf(c.stderr, "Run 'redisync %s --help' for usage.\n", c.name)
	return exitUsage
}

// waitFlag is a --wait duration whose default, "forever", is not a duration.
type waitFlag struct {
	d   time.Duration
	set bool
}

func (w *waitFlag) String() string {
	if w == nil || !w.set {
		return ""
	}
	return w.d.String()
}

func (w *waitFlag) Set(s string) error {
	d, err := parseWait(s)
	if err != nil {
		return err
	}
	w.d, w.set = d, true
	return nil
}

// parseWait reads a duration ("1m30s") or, as flock's -w, a plain number of seconds ("90", "0.5").
func parseWait(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is neither a duration (1m30s) nor seconds (90)", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %v", d)
	}
	return d, nil
}

// bound returns the wait in the library's terms: -1 for no bound.
func (w *waitFlag) bound() time.Duration {
	if !w.set {
		return -1
	}
	return w.d
}

// waitFlags are the flags of the subcommands that wait to acquire: lock, semaphore and rate.
type waitFlags struct {
	wait     waitFlag
	nowait   bool
	conflict int
}

// register registers the wait flags; what is what is waited for, as a participle: "acquired".
func (f *waitFlags) register(cmd *command, what string) {
	waitUsage := "give up with status 75 if not " + what + " within `DURATION` (1m30s, or seconds: 90); 0 tries once (default: wait as long as\nit takes); connecting counts against it"
	cmd.fs.Var(&f.wait, "wait", waitUsage)
	cmd.fs.Var(&f.wait, "w", "short for --wait `DURATION`")
	cmd.fs.BoolVar(&f.nowait, "n", false, "do not wait: try once (--wait 0)")
	cmd.fs.BoolVar(&f.nowait, "nonblock", false, "same as -n")
	cmd.fs.IntVar(&f.conflict, "E", exitNotAcquired, "exit with `STATUS` instead of 75 when not "+what+"; with 0, quietly (a cron job that skips a run)")
	cmd.fs.IntVar(&f.conflict, "conflict-exit-code", exitNotAcquired, "same as -E `STATUS`")
}

// given reports whether any wait flag was given.
func (f *waitFlags) given(cmd *command) bool {
	set := false
	cmd.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "wait", "w", "n", "nonblock", "E", "conflict-exit-code":
			set = true
		}
	})
	return set
}

// check checks the wait flags together, and makes -n a wait of 0. It returns exitUsage, or -1.
func (f *waitFlags) check(cmd *command) int {
	switch {
	case f.conflict < 0 || f.conflict > 255:
		return cmd.usageError("-E %d: a status is from 0 to 255", f.conflict)
	case f.nowait && f.wait.set && f.wait.d != 0:
		return cmd.usageError("-n and --wait %v exclude each other", f.wait.d)
	}
	if f.nowait {
		f.wait = waitFlag{set: true}
	}
	return -1
}

// notAcquired reports a wait that ended without acquiring (or a latch still counting down), and
// returns the status -E chose: silent with -E 0, which makes it no failure, as with --quiet.
func (f *waitFlags) notAcquired(cmd *command, format string, args ...any) int {
	if f.conflict != 0 {
		cmd.say(format, args...)
	}
	return f.conflict
}

// minConnect is the least time a bounded wait gives the connection: --wait 0 still connects.
const minConnect = time.Second

// budget is how long the connection may take within the wait bound (< 0: no bound): everything the
// tool sends before the acquisition counts against the bound, so that a stalled server cannot hold
// the tool past it.
func (f *waitFlags) budget() time.Duration {
	if !f.wait.set {
		return -1
	}
	return max(f.wait.d, minConnect)
}

// before returns the ctx of what is sent before the acquisition of a run that started at start:
// it ends with the connection's budget, or after a minute without a wait bound.
func (f *waitFlags) before(start time.Time) (context.Context, context.CancelFunc) {
	budget := f.budget()
	if budget < 0 {
		budget = time.Minute
	}
	return context.WithDeadline(context.Background(), start.Add(budget))
}

// durationFlag registers a non-negative duration flag.
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	fs.Func(name, usage+defaultNote(def), func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("negative duration %v", d)
		}
		*p = d
		return nil
	})
	return p
}

func defaultNote(def time.Duration) string {
	if def == 0 {
		return ""
	}
	return fmt.Sprintf(" (default %v)", def)
}

// printJSON writes v as indented JSON, as every --json does.
func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
