package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// bin is the tool, built once for every test that runs it as a separate process.
var bin string

func TestMain(m *testing.M) {
	if out := os.Getenv(measureEnv); out != "" {
		os.Exit(measure(out, os.Args[1:]))
	}
	dir, err := buildDir()
	if err == nil {
		bin = filepath.Join(dir, "redisync")
		err = build(bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building redisync:", err)
		os.Exit(1)
	}
	testkit.Main(m)
}

// buildDir returns where to put the binary. 'go test' runs the test binary from a work directory it
// removes afterwards: the binary goes beside it, so nothing is left behind.
func buildDir() (string, error) {
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "go-build") {
			return dir, nil
		}
	}
	return os.MkdirTemp("", "redisync-test-")
}

func build(out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, ".")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, b)
	}
	return nil
}

// proc is one run of the tool as a separate process.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	code   int
	took   time.Duration // from start to the end of the process
}

// tool prepares the tool with args, talking to addr through $REDISYNC_ADDR.
func tool(t testing.TB, addr string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	// A race-built tool would sleep a second at exit (GORACE's default); a race it finds exits 66.
	p.cmd.Env = append(os.Environ(), addrEnv+"="+addr, "GORACE=atexit_sleep_ms=0")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// A test that fails half-way must not hang on a grandchild that keeps the output pipes open.
	p.cmd.WaitDelay = 10 * time.Second
	return p
}

// start starts the process; the test's cleanup kills it if it is still running.
func (p *proc) start() *proc {
	p.t.Helper()
	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		p.took = time.Since(began)
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			p.code = exitStatus(exit.ProcessState)
		default:
			p.code = -1
		}
	}()
	p.t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits at most d for the process to end and returns its exit status.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		p.t.Fatalf("%v still running after %v\nstdout: %s\nstderr: %s", p.cmd.Args, d, p.stdout.String(), p.stderr.String())
		return -1
	}
}

// run runs the process to its end (within a minute) and returns its exit status.
func (p *proc) run() int {
	p.t.Helper()
	return p.start().wait(time.Minute)
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

func (p *proc) String() string {
	return fmt.Sprintf("%v: exit %d\nstdout: %s\nstderr: %s", p.cmd.Args[1:], p.code, p.stdout.String(), p.stderr.String())
}

// waitFor polls fn until it returns true or d passes.
func waitFor(t testing.TB, d time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout (help) or stderr (errors)
	}{
		{nil, exitUsage, "Usage:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"--help"}, exitOK, "redisync lock"},
		{[]string{"lock", "--help"}, exitOK, "Exit status"},
		{[]string{"lock", "-h"}, exitOK, "Examples"},
		{[]string{"demo", "--help"}, exitOK, "Examples"},
		{[]string{"inspect", "--help"}, exitOK, "Examples"},
		{[]string{"lock"}, exitUsage, "missing NAME"},
		{[]string{"lock", "x"}, exitUsage, "missing COMMAND"},
		{[]string{"lock", "x", "--"}, exitUsage, "missing COMMAND"},
		{[]string{"lock", "--wait", "-1s", "x", "--", "true"}, exitUsage, "negative"},
		{[]string{"lock", "--lease", "soon", "x", "--", "true"}, exitUsage, "invalid value"},
		{[]string{"lock", "--nope", "x", "--", "true"}, exitUsage, "not defined"},
		{[]string{"lock", "", "--", "true"}, exitUsage, "empty NAME"},
		{[]string{"lock", "x", "y", "--", "true"}, exitUsage, `unexpected argument "y"`},
		{[]string{"lock", "x", "--", "no-such-command-here"}, exitNotFound, "not found"},
		{[]string{"inspect"}, exitUsage, "missing NAME"},
		{[]string{"inspect", "--watch", "--interval", "0", "x"}, exitUsage, "too short"},
		{[]string{"inspect", "--watch", "--interval", "99ms", "x"}, exitUsage, "too short"},
		{[]string{"inspect", "--db", "-5", "x"}, exitUsage, "database number"},
		{[]string{"lock", "--db", "-5", "x", "--", "true"}, exitUsage, "database number"},
		{[]string{"inspect", "--addr", ":::", "x"}, exitUsage, "bad address"},
		{[]string{"list", "--addr", "[::1", "x"}, exitUsage, "bad address"},
		{[]string{"--addr", ":::", "inspect", "x"}, exitUsage, "bad address"},
		{[]string{"--db", "-5", "list"}, exitUsage, "database number"},
		{[]string{"--wait", "1", "lock", "x", "--", "true"}, exitUsage, "only connection flags"},
		{[]string{"--addr", "127.0.0.1:1"}, exitUsage, "Usage:"},
		{[]string{"--addr", "127.0.0.1:1", "--help"}, exitOK, "Usage:"},
		{[]string{"rate", "--rate", "1/s", "redisync_holder:{x}", "--", "true"}, exitUsage, "namespace"},
		{[]string{"rate", "--rate", "1/s", "-n", "-w", "2", "x", "--", "true"}, exitUsage, "exclude"},
		{[]string{"rate", "--rate", "1/s", "-E", "256", "x", "--", "true"}, exitUsage, "-E 256"},
		{[]string{"demo", "--buyers", "0"}, exitUsage, "--buyers"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("redisync %q: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tc.args, code, tc.code, tc.out, stdout.String(), stderr.String())
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		pos, tail  []string
		wantWait   string
		hasDashDsh bool
	}{
		{[]string{"--wait", "1s", "n", "--", "ls", "-l"}, []string{"n"}, []string{"ls", "-l"}, "1s", true},
		{[]string{"n", "--wait", "1s", "--", "ls"}, []string{"n"}, []string{"ls"}, "1s", true},
		{[]string{"n", "ls", "-l"}, []string{"n"}, []string{"ls", "-l"}, "", false},
		{[]string{"--wait=2s", "n", "ls", "--wait", "3s"}, []string{"n"}, []string{"ls", "--wait", "3s"}, "2s", false},
		{[]string{"n", "--", "sh", "-c", "echo -- x"}, []string{"n"}, []string{"sh", "-c", "echo -- x"}, "", true},
	} {
		var out bytes.Buffer
		cmd := newCommand("lock", "", "", &out, &out)
		var w waitFlag
		cmd.fs.Var(&w, "wait", "")
		pos, tail, dd, code := cmd.parse(tc.args, 1)
		if code >= 0 || !slices.Equal(pos, tc.pos) || !slices.Equal(tail, tc.tail) || w.String() != tc.wantWait || dd != tc.hasDashDsh {
			t.Errorf("parse %q = %q %q %v (wait %q, code %d), want %q %q %v (wait %q)", tc.args, pos, tail, dd, w.String(), code, tc.pos, tc.tail, tc.hasDashDsh, tc.wantWait)
		}
	}
}

// TestUnreachable: no server, no lock, COMMAND never runs, status 69.
func TestUnreachable(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	p := tool(t, "127.0.0.1:1", "lock", "x", "--", "touch", marker)
	if code := p.run(); code != exitUnavailable {
		t.Fatalf("want %d\n%v", exitUnavailable, p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("COMMAND ran without the lock")
	}
	p = tool(t, "127.0.0.1:1", "inspect", "x")
	if code := p.run(); code != exitUnavailable {
		t.Fatalf("want %d\n%v", exitUnavailable, p)
	}
}

// TestFlagsBeforeSubcommand: the connection flags may come before the subcommand's name.
func TestFlagsBeforeSubcommand(t *testing.T) {
	tg := testkit.Standalone(t)
	p := tool(t, "127.0.0.1:1", "--addr", tg.Addrs[0], "--db", "0", "lock", "-n", "flags-first", "--", "true")
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	p = tool(t, "127.0.0.1:1", "--addr="+tg.Addrs[0], "inspect", "flags-first")
	if code := p.run(); code != 0 || !strings.Contains(p.stdout.String(), "flags-first: none") {
		t.Fatalf("%v", p)
	}
}
