package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the tool passes on to COMMAND. Waiting for the lock, they stop the wait.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalStatus is the shell's exit status for a process ended by sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitFailure
}

// interrupted is the cause of a wait cut short by a signal.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return "interrupted by " + e.sig.String() }

// signals catches the forwarded signals from now until stop: a signal must never kill the tool
// while it holds a lock, or the lock would stay behind for a whole lease.
type signals struct {
	ch chan os.Signal
}

func catchSignals() *signals {
	s := &signals{ch: make(chan os.Signal, 8)}
	for _, sig := range forwarded {
		// A signal the tool was started ignoring (nohup, a background job) stays ignored, for
		// COMMAND too, which inherits that.
		if !signal.Ignored(sig) {
			signal.Notify(s.ch, sig)
		}
	}
	return s
}

func (s *signals) stop() { signal.Stop(s.ch) }

// cancelOn cancels ctx with an interrupted cause when a signal is caught, until the returned stop is
// called. A signal caught afterwards is left for supervise to pass on.
func (s *signals) cancelOn(cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case sig := <-s.ch:
			cancel(interrupted{sig})
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-watching
	}
}

// resolve finds COMMAND before anything is acquired, so that a typo costs no lock. It returns the
// shell's status for a command that cannot run.
func resolve(name string, stderr io.Writer, sub string) (string, int) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, -1
	}
	fmt.Fprintf(stderr, "redisync %s: %v\n", sub, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return "", exitNotFound
	}
	return "", exitCannotExec
}

// child is COMMAND, run while a lock or permit is held.
type child struct {
	cmd   *exec.Cmd
	group bool // COMMAND leads its own process group, which receives the signals
}

// startChild starts COMMAND with the tool's stdin, stdout and stderr.
//
// Like timeout(1), COMMAND gets its own process group, so that a lost lock stops everything COMMAND
// started (sh -c '...' and its children), not only its first process. On a terminal it stays in the
// tool's group instead, so that it can read the terminal and gets Ctrl-C directly.
func startChild(path string, argv []string) (*child, error) {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	attr := &syscall.SysProcAttr{}
	deathSignal(attr)
	c := &child{cmd: cmd, group: !isTerminal(os.Stdin)}
	attr.Setpgid = c.group
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func (c *child) signal(sig syscall.Signal) {
	if c.group {
		// The group id is COMMAND's pid; its processes may outlive COMMAND itself.
		syscall.Kill(-c.cmd.Process.Pid, sig)
		return
	}
	c.cmd.Process.Signal(sig)
}

// supervise waits for COMMAND to end. It passes caught signals on to COMMAND; when held ends (the
// lock is lost, or its fixed lease ran out) it sends SIGTERM, then SIGKILL after grace. It returns
// COMMAND's exit status and, when held ended first, its cause.
func (c *child) supervise(held context.Context, sigs *signals, grace time.Duration, onLost func(cause error)) (status int, lost error) {
	done := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(done)
	}()
	heldDone := held.Done()
	var kill <-chan time.Time
	for {
		select {
		case <-done:
			return exitStatus(c.cmd.ProcessState), lost
		case sig := <-sigs.ch:
			c.signal(sig.(syscall.Signal))
		case <-heldDone:
			heldDone = nil
			lost = context.Cause(held)
			onLost(lost)
			c.signal(syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			c.signal(syscall.SIGKILL)
		}
	}
}

// exitStatus is the shell's status for a finished process: its exit code, or 128 + the signal.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
