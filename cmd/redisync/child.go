package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the tool passes on to COMMAND. Waiting for the lock, they stop the wait.
//
// SIGQUIT is one of them: a Go program's default for it (a goroutine dump and exit) would leave the
// lock behind.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

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

// child is COMMAND under its supervisor (see supervise), run while a lock or permit is held.
type child struct {
	cmd  *exec.Cmd
	kill *os.File // closing it makes the supervisor kill the whole tree
	tty  int      // the terminal handed to COMMAND's group as its foreground, or -1
}

// startChild starts COMMAND with the tool's stdin, stdout and stderr, under a supervisor that leads
// COMMAND's process group. Like timeout(1), the group receives the signals, so that a lost lock
// stops everything COMMAND started (sh -c '...' and its children), not only its first process.
// When the tool is in the foreground of a terminal, the group becomes the terminal's foreground
// instead, as a shell does for a job: COMMAND can read the terminal, and Ctrl-C reaches it once,
// from the terminal, and not a second time from the tool.
func startChild(path string, argv []string, grace time.Duration, env []string) (*child, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	args := append([]string{superviseArg, strconv.FormatInt(grace.Milliseconds(), 10), path}, argv...)
	cmd := exec.Command(supervisorPath(), args...)
	cmd.Args[0] = "redisync"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r} // the supervisor's parentFD
	cmd.Env = env
	c := &child{cmd: cmd, kill: w, tty: foregroundTTY()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: c.tty >= 0, Ctty: max(c.tty, 0)}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	return c, nil
}

// foregroundTTY returns the descriptor (0, 1 or 2) of a terminal whose foreground is the tool's
// process group, or -1.
func foregroundTTY() int {
	for fd := range 3 {
		if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pgrp == syscall.Getpgrp() {
			return fd
		}
	}
	return -1
}

// takeTerminal makes the tool's group the terminal's foreground again once COMMAND is done.
func (c *child) takeTerminal() {
	if c.tty < 0 {
		return
	}
	// From the background, tcsetpgrp stops the caller with SIGTTOU unless it ignores it.
	signal.Ignore(syscall.SIGTTOU)
	unix.IoctlSetPointerInt(c.tty, unix.TIOCSPGRP, syscall.Getpgrp())
	signal.Reset(syscall.SIGTTOU)
}

// signal sends sig to COMMAND's process group (the supervisor ignores it).
func (c *child) signal(sig syscall.Signal) {
	syscall.Kill(-c.cmd.Process.Pid, sig)
}

// supervise waits for COMMAND and what it started to end. It passes caught signals on to COMMAND's
// group; when held ends (the lock is lost, or its fixed lease ran out) it sends SIGTERM, and has the
// whole tree killed after grace. It returns COMMAND's exit status and, when held ended first, its
// cause.
func (c *child) supervise(held context.Context, sigs *signals, grace time.Duration, onLost func(cause error)) (status int, lost error) {
	done := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(done)
	}()
	defer c.takeTerminal()
	defer c.kill.Close()
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
			c.kill.Close()
		}
	}
}
