//go:build unix && !linux

package main

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Elsewhere there is no child subreaper and no parent-death signal: the supervisor ends what is
// left in COMMAND's process group, and a process that leaves the group (setsid, a daemon) escapes
// it. COMMAND itself and the group's processes still die when the tool dies: the supervisor reads
// EOF from the tool's pipe and kills the group.

func supervisorPath() string {
	exe, _ := os.Executable()
	return exe
}

func becomeSubreaper() {}

func deathSignal(*syscall.SysProcAttr) {}

// endTree sends SIGTERM to COMMAND's process group (the supervisor's own, which survives it) and
// lets the group go: without a subreaper it cannot tell when the group is empty.
func endTree(time.Duration, <-chan struct{}) bool {
	syscall.Kill(0, syscall.SIGTERM)
	return true
}

// killTree kills the process group, the supervisor with it.
func killTree() { syscall.Kill(0, syscall.SIGKILL) }

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TIOCGETA)
	return err == nil
}
