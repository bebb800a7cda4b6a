package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// superviseArg, as the first argument, runs the tool as COMMAND's supervisor (see startChild).
const superviseArg = "__redisync_supervise"

// parentFD is the supervisor's end of a pipe whose other end only the tool holds: it reads EOF when
// the tool is gone, however it died (kill -9, the OOM killer), or when the tool closes it to have
// the whole tree killed.
const parentFD = 3

// supervise is the supervisor: the process between the tool and COMMAND. It leads the process group
// that COMMAND runs in, which gets the signals, and on Linux it is the child subreaper of COMMAND's
// tree, so that no process COMMAND started can escape it by becoming an orphan. It exits with
// COMMAND's status once the rest of the tree is gone too: the tool releases the lock only then.
// When the tool dies or asks for it, it kills the whole tree at once.
//
// args: the grace in milliseconds, COMMAND's path, then COMMAND and its arguments.
func supervise(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "redisync: the supervisor is started by the tool itself")
		return exitUsage
	}
	graceMs, _ := strconv.Atoi(args[0])
	grace := time.Duration(graceMs) * time.Millisecond
	path, argv := args[1], args[2:]
	becomeSubreaper()
	syscall.CloseOnExec(parentFD)
	parent := os.NewFile(parentFD, "parent")

	// The signals reach COMMAND through the process group, from the terminal or from the tool: the
	// supervisor itself only has to survive them. Caught (not ignored) signals are reset for COMMAND.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	go func() {
		for range sigs {
		}
	}()

	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	deathSignal(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "redisync: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotExec
	}
	parentGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, parent)
		close(parentGone)
	}()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-parentGone:
		killTree()
		return exitLost
	}
	status := exitStatus(cmd.ProcessState)
	// What COMMAND left running goes too, politely first: the hold ends when the tool returns.
	if !endTree(grace, parentGone) {
		killTree()
	}
	return status
}

// exitStatus is the shell's status for a finished process: its exit code, or 128 + the signal.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
