package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// On Linux the supervisor is COMMAND's child subreaper: a process of COMMAND's tree whose parent
// dies is re-parented to the supervisor, not to init, so the supervisor can find and end every one
// of them, whatever process group or session they moved to.

// supervisorPath is the tool's own executable; /proc/self/exe when it was removed or replaced on
// disk since it started (an upgrade), which still names the running one.
func supervisorPath() string {
	if exe, err := os.Executable(); err == nil {
		if a, err := os.Stat(exe); err == nil {
			if b, err := os.Stat("/proc/self/exe"); err == nil && os.SameFile(a, b) {
				return exe
			}
		}
	}
	return "/proc/self/exe"
}

func becomeSubreaper() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// deathSignal makes the kernel kill COMMAND when the supervisor dies (kill -9 included).
func deathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// descendants returns the pids of every process below this one, from /proc.
func descendants() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// reapAll reaps exited children (orphans of the tree included) and reports whether any remain.
func reapAll() (left bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // ECHILD: none left
			return false
		case pid == 0:
			return true
		}
	}
}

// endTree sends SIGTERM to what is left of COMMAND's tree and waits up to grace for it to end. It
// reports false when something still runs (then killTree ends it) or the tool went away.
func endTree(grace time.Duration, parentGone <-chan struct{}) bool {
	if !reapAll() && len(descendants()) == 0 {
		return true
	}
	for _, pid := range descendants() {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	// Orphans are re-parented to the supervisor, so its children are the whole tree's survivors.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for reapAll() {
		select {
		case <-deadline.C:
			return false
		case <-parentGone:
			return false
		case <-tick.C:
		}
	}
	return true
}

// killTree kills every process below the supervisor and reaps them.
func killTree() {
	for range 100 {
		pids := descendants()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for reapAll() {
			if len(descendants()) == 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	reapAll()
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
