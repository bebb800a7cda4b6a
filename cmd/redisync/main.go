// Command redisync runs commands under distributed locks and semaphores held in Redis, waits on
// countdown latches, shows what Redis holds for a lock, and demonstrates the library on an embedded
// server.
//
//	redisync demo                                   # the flash-sale demo, nothing to install
//	redisync lock [flags] NAME -- COMMAND [ARGS...]  # flock(1) across machines
//	redisync semaphore [flags] --permits N NAME -- COMMAND [ARGS...]
//	redisync latch NAME set N | countdown | count | await [--wait DURATION]
//	redisync rate [flags] --rate N/INTERVAL NAME -- COMMAND [ARGS...]
//	redisync inspect [--json] [--watch] NAME
//	redisync list [--json] [PATTERN]
//	redisync unlock --force NAME
//	redisync completion bash|zsh
//
// Every subcommand takes --help. The locks and permits it takes keep Redisson's layout in Redis, so a
// shell script and a Java service can exclude each other on the same name.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
)

// Exit statuses of the tool itself. COMMAND's own status is passed through unchanged.
const (
	exitOK          = 0
	exitFailure     = 1  // an error the message explains (a Redis error, a wrong type, ...)
	exitUsage       = 64 // bad flags or arguments (EX_USAGE)
	exitDataErr     = 65 // Redis holds something else under the name: WRONGTYPE, not a number (EX_DATAERR)
	exitUnavailable = 69 // Redis could not be reached (EX_UNAVAILABLE)
	exitNotAcquired = 75 // not acquired within --wait (EX_TEMPFAIL): COMMAND did not run
	exitLost        = 76 // the lock or permit was lost while COMMAND ran: COMMAND was terminated
	exitNoPerm      = 77 // Redis refused: NOPERM, wrong user or password (EX_NOPERM)
	exitCannotExec  = 126
	exitNotFound    = 127
)

const usage = `redisync: distributed locks, semaphores and latches on Redis, for shells, cron jobs and CI.

Usage:
  redisync demo [flags]                                    the flash-sale demo (embedded Redis by default)
  redisync lock [flags] NAME -- COMMAND [ARGS...]          run COMMAND holding a lock (flock(1) across machines)
  redisync semaphore [flags] --permits N NAME -- COMMAND   run COMMAND holding one of N permits
  redisync latch NAME set N | countdown | count | await    a countdown latch
  redisync rate [flags] --rate N/INTERVAL NAME -- COMMAND  run COMMAND once a rate limiter allows it
  redisync semaphore --update --permits N NAME             change the permits of a semaphore in place
  redisync rate --update --rate N/INTERVAL NAME            change the rate of a rate limiter in place
  redisync inspect [--json] [--watch] NAME                 what Redis holds under NAME, read-only
  redisync list [--json] [PATTERN]                         the locks, semaphores, ... in Redis (SCAN)
  redisync unlock --force NAME                             break a lock whoever holds it (asks on a terminal)
  redisync completion bash|zsh                             a shell completion script
  redisync version [--json]

Connection (every subcommand, before or after its name): --addr host:port[,host:port...] (several = cluster),
--sentinel MASTER (then --addr lists the sentinels); default $REDISYNC_ADDR, else 127.0.0.1:6379.
Or --url redis://USER@HOST:PORT/DB, rediss:// for TLS ($REDISYNC_URL). --user USER; the password
from $REDISYNC_PASSWORD or --password-file, never from argv; --tls, --cacert, --cert, --key; --db N.

Every subcommand takes -q (--quiet: nothing on stderr but errors), -v (--verbose: the library's log
records too, as lines "redisync SUBCOMMAND: library: ..."), and --json where it prints a value.
Flags take one dash or two. Run 'redisync SUBCOMMAND --help' for the flags and exit statuses of
each; docs/cli.md describes them all.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == superviseArg {
		os.Exit(supervise(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the tool with args (without the program name) and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	// No message may show a password, wherever it comes from (a server's error echoing a URL...).
	stderr = redactor{stderr}
	lead, args, code := leadingFlags(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	// Each subcommand runs with its args, the leading connection flags first.
	commands := map[string]func(args []string, stdout, stderr io.Writer) int{
		"demo": cmdDemo, "lock": cmdLock, "semaphore": cmdSemaphore, "latch": cmdLatch, "inspect": cmdInspect,
		"list": cmdList, "rate": cmdRate, "unlock": cmdUnlock, "completion": cmdCompletion,
	}
	sub := args[0]
	if cmd, ok := commands[sub]; ok {
		return cmd(slices.Concat(lead, args[1:]), stdout, stderr)
	}
	switch sub {
	case "version", "-version", "--version":
		switch {
		case len(args) == 2 && strings.TrimLeft(args[1], "-") == "json":
			printJSON(stdout, struct {
				Version string `json:"version"`
			}{version()})
		case len(args) > 1:
			fmt.Fprintf(stderr, "redisync version: unexpected argument %q (it takes --json)\n", args[1])
			return exitUsage
		default:
			fmt.Fprintln(stdout, "redisync", version())
		}
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "redisync: unknown command %q\n\n%s", sub, usage)
	return exitUsage
}

// leadingFlags takes the connection flags given before the subcommand ("redisync --addr X lock
// ..."), which the subcommand gets first among its own. It returns them and the rest, or an exit
// status.
func leadingFlags(args []string, stdout, stderr io.Writer) (lead, rest []string, code int) {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return nil, args, -1
	}
	switch strings.TrimLeft(args[0], "-") {
	case "version", "help", "h":
		return nil, args, -1
	}
	fs := flag.NewFlagSet("redisync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	var conn connFlags
	conn.register(fs)
	var out outFlags
	out.register(fs)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return nil, nil, exitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "Before the subcommand, only connection flags, -q and -v go (see 'redisync --help').\n")
		return nil, nil, exitUsage
	}
	rest = fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return nil, nil, exitUsage
	}
	return args[:len(args)-len(rest)], rest, -1
}

// version is the module's version and VCS revision, as the go command recorded them.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += "+dirty"
		}
	}
	return v + " " + info.GoVersion
}
