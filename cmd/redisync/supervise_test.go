//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/redisync/redisync/internal/testkit"
)

// treeScript starts three more processes besides itself, writing every pid to "$0": one in the
// background, one orphaned at once (a double fork), one in a session of its own (setsid). Each
// ignores SIGTERM, so only SIGKILL ends them.
const treeScript = `trap '' TERM
sh -c 'trap "" TERM; echo $$ >> "$0"; exec sleep 300' "$0" &
(sh -c 'trap "" TERM; echo $$ >> "$0"; exec sleep 301' "$0" &)
setsid sh -c 'trap "" TERM; echo $$ >> "$0"; exec sleep 302' "$0" &
echo $$ >> "$0"
`

// treeStarted, after treeScript, waits until the four processes have written their pids.
const treeStarted = `while [ "$(wc -l < "$0")" -lt 4 ]; do sleep 0.01; done
`

// treePids waits until the tree has written its four pids and returns them.
func treePids(t *testing.T, file string) []int {
	t.Helper()
	var pids []int
	waitFor(t, 10*time.Second, "COMMAND's tree started", func() bool {
		b, _ := os.ReadFile(file)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return len(pids) == 4
	})
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// alive reports whether pid runs (a zombie does not count: it has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

func requireAllGone(t *testing.T, pids []int, d time.Duration, what string) {
	t.Helper()
	waitFor(t, d, what, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// TestKilledToolKillsTree: kill -9 of the tool takes every process COMMAND started with it, also the
// ones that were orphaned or left COMMAND's process group and session.
func TestKilledToolKillsTree(t *testing.T) {
	t.Parallel()
	tg := testkit.Standalone(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	p := tool(t, tg.Addrs[0], "lock", "tree-killed", "--", "sh", "-c", treeScript+"wait", pidFile).start()
	pids := treePids(t, pidFile)
	p.signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	requireAllGone(t, pids, 10*time.Second, "COMMAND's whole tree killed with the tool")
}

// TestCommandEndEndsTree: what COMMAND leaves running when it exits is stopped before the lock is
// released; the status is COMMAND's own.
func TestCommandEndEndsTree(t *testing.T) {
	t.Parallel()
	tg := testkit.Standalone(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	// COMMAND exits once its whole tree has written its pids: on a busy machine a child that had not
	// yet written its own would be stopped with the tree before it did, and never be counted.
	p := tool(t, tg.Addrs[0], "lock", "--grace", "200ms", "tree-left", "--", "sh", "-c", treeScript+treeStarted+"exit 3", pidFile)
	if code := p.run(); code != 3 {
		t.Fatalf("want COMMAND's status 3\n%v", p)
	}
	pids := treePids(t, pidFile)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived the tool", pid)
		}
	}
}

// TestLeaseEndStopsTree: when the lease ends, COMMAND's whole tree is stopped, not only its first
// process, and not only its process group.
func TestLeaseEndStopsTree(t *testing.T) {
	t.Parallel()
	tg := testkit.Standalone(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	p := tool(t, tg.Addrs[0], "lock", "--lease", "1s", "--grace", "200ms", "tree-lease", "--", "sh", "-c", treeScript+"wait", pidFile)
	if code := p.run(); code != exitLost {
		t.Fatalf("want %d\n%v", exitLost, p)
	}
	pids := treePids(t, pidFile)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived the lease", pid)
		}
	}
}

// TestLockSIGQUIT: SIGQUIT is passed on like SIGTERM (no goroutine dump, no lock left behind).
func TestLockSIGQUIT(t *testing.T) {
	t.Parallel()
	tg := testkit.Standalone(t)
	rdb := tg.Redis(t)
	started := filepath.Join(t.TempDir(), "started")
	p := tool(t, tg.Addrs[0], "lock", "quit", "--", "sh", "-c",
		`trap 'exit 7' QUIT; touch "$0"; while :; do sleep 0.05; done`, started).start()
	waitFor(t, 10*time.Second, "COMMAND started", func() bool { _, err := os.Stat(started); return err == nil })
	p.signal(syscall.SIGQUIT)
	if code := p.wait(10 * time.Second); code != 7 || strings.Contains(p.stderr.String(), "goroutine") {
		t.Fatalf("want COMMAND's status 7\n%v", p)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "quit"); n != "0" {
		t.Error("the lock is still held after SIGQUIT")
	}
}

// TestRedisStoppedWhileRunning: Redis gone when COMMAND ends: the tool says so at once, naming the
// error, and does not hang retrying the release.
func TestRedisStoppedWhileRunning(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	dir := t.TempDir()
	started, finish := filepath.Join(dir, "started"), filepath.Join(dir, "finish")
	p := tool(t, tg.Addrs[0], "lock", "stopped", "--", "sh", "-c",
		`touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`, started, finish).start()
	waitFor(t, 10*time.Second, "COMMAND started", func() bool { _, err := os.Stat(started); return err == nil })
	tg.Servers[0].Kill()
	os.WriteFile(finish, nil, 0o644)
	start := time.Now()
	code := p.wait(time.Minute)
	// The release would retry for 5 s and more; saying so takes one refused connection.
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("the tool took %v after COMMAND ended", elapsed)
	}
	if code != 0 || !strings.Contains(p.stderr.String(), "connection refused") || !strings.Contains(p.stderr.String(), "unreachable") {
		t.Errorf("want COMMAND's status and the Redis error\n%v", p)
	}
}

// pty is a pseudo-terminal: the tool runs as the leader of a session whose controlling terminal it
// is, as in an interactive shell; the test is the terminal.
type pty struct {
	master, slave *os.File
	mu            sync.Mutex
	out           bytes.Buffer
}

func openPTY(t *testing.T) *pty {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &pty{master: master, slave: slave}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		slave.Close()
		master.Close()
		<-done
	})
	return p
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// attach makes the terminal the process's stdin, stdout, stderr and controlling terminal.
func (p *pty) attach(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// TestTerminalCtrlCOnce: on a terminal, Ctrl-C reaches COMMAND once (from the terminal; the tool
// does not send it a second time), and a signal sent to the tool reaches it once too.
func TestTerminalCtrlCOnce(t *testing.T) {
	t.Parallel()
	tg := testkit.Standalone(t)
	dir := t.TempDir()
	started, record := filepath.Join(dir, "started"), filepath.Join(dir, "record")
	term := openPTY(t)
	p := tool(t, tg.Addrs[0], "lock", "tty-once", "--", "sh", "-c",
		// The trap runs as soon as "wait" is interrupted: a second SIGINT would not merge into the first.
		`trap 'echo INT >> "$1"' INT; trap 'echo TERM >> "$1"; exit 5' TERM; touch "$0"; while :; do sleep 0.05 & wait $!; done`, started, record)
	term.attach(p.cmd)
	p.start()
	waitFor(t, 10*time.Second, "COMMAND started", func() bool { _, err := os.Stat(started); return err == nil })
	term.master.Write([]byte{3}) // Ctrl-C
	waitFor(t, 10*time.Second, "COMMAND got SIGINT", func() bool { b, _ := os.ReadFile(record); return len(b) > 0 })
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 5 {
		t.Fatalf("want COMMAND's status 5\n%v\nterminal: %s", p, term.output())
	}
	if b, _ := os.ReadFile(record); string(b) != "INT\nTERM\n" {
		t.Errorf("COMMAND got %q, want INT then TERM, once each", b)
	}
}

// TestTerminalWaitingLine: waiting with stderr on a terminal, the tool says once what it waits for
// and who holds it: the holding tool's pid, host and command.
func TestTerminalWaitingLine(t *testing.T) {
	t.Parallel()
	tg := testkit.Standalone(t)
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	holder := tool(t, tg.Addrs[0], "lock", "tty-wait", "--", "sh", "-c",
		`touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`, started, release).start()
	waitFor(t, 10*time.Second, "the holder runs", func() bool { _, err := os.Stat(started); return err == nil })

	term := openPTY(t)
	w := tool(t, tg.Addrs[0], "lock", "tty-wait", "--", "true")
	term.attach(w.cmd)
	w.start()
	host, _ := os.Hostname()
	want := fmt.Sprintf(`waiting for the lock "tty-wait", held by pid %d on %s (sh)`, holder.cmd.Process.Pid, host)
	waitFor(t, 10*time.Second, "the waiting line", func() bool { return strings.Contains(term.output(), want) })
	os.WriteFile(release, nil, 0o644)
	if code := w.wait(10 * time.Second); code != 0 {
		t.Fatalf("%v\nterminal: %s", w, term.output())
	}
	if n := strings.Count(term.output(), "waiting for"); n != 1 {
		t.Errorf("%d waiting lines, want 1: %s", n, term.output())
	}
}
