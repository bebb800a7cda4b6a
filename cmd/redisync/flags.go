package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
}

func newCommand(name, header, footer string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet("redisync "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // help is printed by parse, to stdout when asked for
	return &command{fs: fs, name: name, header: header, footer: footer, stdout: stdout, stderr: stderr}
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

func (f *waitFlags) register(cmd *command) {
	waitUsage := "give up with status 75 after `DURATION` (1m30s, or seconds: 90) without acquiring; 0 tries once (default: wait as long as it takes);\nconnecting counts against it"
	cmd.fs.Var(&f.wait, "wait", waitUsage)
	cmd.fs.Var(&f.wait, "w", "short for --wait")
	cmd.fs.BoolVar(&f.nowait, "n", false, "do not wait: try once (--wait 0)")
	cmd.fs.BoolVar(&f.nowait, "nonblock", false, "same as -n")
	cmd.fs.IntVar(&f.conflict, "E", exitNotAcquired, "exit with `STATUS` when not acquired")
	cmd.fs.IntVar(&f.conflict, "conflict-exit-code", exitNotAcquired, "same as -E")
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
