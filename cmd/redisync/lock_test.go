package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// counterScript reads a number from a file, sleeps, and writes it back plus one: without mutual
// exclusion, concurrent runs lose updates. mkdir is atomic, so a second process inside is recorded.
const counterScript = `mkdir "$D/inside" 2>/dev/null || echo overlap >> "$D/overlaps"
n=$(cat "$D/ctr")
sleep 0.01
echo $((n + 1)) > "$D/ctr"
rmdir "$D/inside"`

// TestLockCounter: 8 processes run the tool 20 times each around a read-sleep-write of a file.
func TestLockCounter(t *testing.T) {
	t.Parallel()
	addr := testkit.Own(t).Addrs[0]
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ctr"), []byte("0\n"), 0o644)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				p := tool(t, addr, "lock", "ctr", "--", "sh", "-c", counterScript)
				p.cmd.Env = append(p.cmd.Env, "D="+dir)
				if code := p.run(); code != 0 {
					t.Errorf("%v", p)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "ctr"))
	if got := strings.TrimSpace(string(b)); got != "160" {
		t.Errorf("counter = %s, want 160", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("two processes were inside at once %d times", strings.Count(string(b), "overlap"))
	}
}

// TestLockCluster: the tool on a 3-master cluster (several addresses), lock and inspect.
func TestLockCluster(t *testing.T) {
	tg := testkit.Cluster(t)
	addrs := strings.Join(tg.Addrs, ",")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ctr"), []byte("0\n"), 0o644)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				p := tool(t, "", "lock", "--addr", addrs, "cluster-ctr", "--", "sh", "-c", counterScript)
				p.cmd.Env = append(p.cmd.Env, "D="+dir)
				if code := p.run(); code != 0 {
					t.Errorf("%v", p)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "ctr"))
	if got := strings.TrimSpace(string(b)); got != "20" {
		t.Errorf("counter = %s, want 20", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "overlaps")); err == nil {
		t.Error("two processes were inside at once")
	}
	tg.RequireNoSubscriptions(t)
}

// hold takes the lock name on addr in this process and returns its release.
func hold(t *testing.T, tg *testkit.Target, name string) func() {
	t.Helper()
	c := tg.Client(t)
	l, err := rlock.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			if err := l.Unlock(held); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

func TestLockWaitGivesUp(t *testing.T) {
	tg := testkit.Own(t)
	hold(t, tg, "busy")
	marker := filepath.Join(t.TempDir(), "ran")

	start := time.Now()
	p := tool(t, tg.Addrs[0], "lock", "--wait", "200ms", "busy", "--", "touch", marker)
	code := p.run()
	elapsed := time.Since(start)
	if code != exitNotAcquired {
		t.Fatalf("want %d\n%v", exitNotAcquired, p)
	}
	// About 200 ms: not before, and well before a second (process start included; the machine is shared).
	if elapsed < 200*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("gave up after %v, want about 200ms", elapsed)
	}
	p = tool(t, tg.Addrs[0], "lock", "--wait", "0", "busy", "--", "touch", marker)
	if code := p.run(); code != exitNotAcquired {
		t.Fatalf("--wait 0: want %d\n%v", exitNotAcquired, p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("COMMAND ran without the lock")
	}
	tg.RequireNoSubscriptions(t)
}

// TestLockWaitsForRelease: a waiting tool runs COMMAND once the holder releases.
func TestLockWaitsForRelease(t *testing.T) {
	tg := testkit.Own(t)
	release := hold(t, tg, "busy")
	marker := filepath.Join(t.TempDir(), "ran")
	p := tool(t, tg.Addrs[0], "lock", "--wait", "30s", "busy", "--", "touch", marker).start()
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("COMMAND ran while the lock was held")
	}
	release()
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("%v", p)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("COMMAND did not run")
	}
}

func TestLockExitStatus(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	for _, tc := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
	} {
		p := tool(t, tg.Addrs[0], "lock", "st", "--", "sh", "-c", tc.script)
		if code := p.run(); code != tc.code {
			t.Errorf("%q: want %d\n%v", tc.script, tc.code, p)
		}
		if n := testkit.DoString(t, rdb, "EXISTS", "st"); n != "0" {
			t.Errorf("%q: the lock is still held after the tool ended", tc.script)
		}
	}
	// COMMAND's output and input are the tool's own.
	p := tool(t, tg.Addrs[0], "lock", "io", "--", "sh", "-c", "read x; echo got $x; echo err >&2")
	p.cmd.Stdin = strings.NewReader("hello\n")
	if code := p.run(); code != 0 || p.stdout.String() != "got hello\n" || p.stderr.String() != "err\n" {
		t.Errorf("%v", p)
	}
}

// TestLockKilledToolFreesLease: kill -9 of a tool holding --lease 2s frees the lock within about 2 s,
// and takes COMMAND with it.
func TestLockKilledToolFreesLease(t *testing.T) {
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	p := tool(t, tg.Addrs[0], "lock", "--lease", "2s", "crash", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 30`, pidFile).start()
	var pid int
	waitFor(t, 10*time.Second, "COMMAND started", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	acquired := time.Now() // no later than this
	p.signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	killed := time.Now()

	if n := testkit.DoString(t, rdb, "EXISTS", "crash"); n != "1" {
		t.Fatal("the lock was released by a killed tool")
	}
	marker := filepath.Join(dir, "ran")
	next := tool(t, tg.Addrs[0], "lock", "--wait", "10s", "crash", "--", "touch", marker)
	if code := next.run(); code != 0 {
		t.Fatalf("%v", next)
	}
	if since := time.Since(acquired); since > 4*time.Second {
		t.Errorf("the next process got the lock %v after the first took it, want about the 2s lease", since)
	}
	if since := time.Since(killed); since < 500*time.Millisecond {
		t.Errorf("the next process got the lock %v after the kill: the lease was not respected", since)
	}
	waitFor(t, 5*time.Second, "COMMAND killed with the tool", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

// TestLockLeaseOutlived: COMMAND running past a fixed lease gets SIGTERM, the tool exits 76.
func TestLockLeaseOutlived(t *testing.T) {
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	dir := t.TempDir()
	termFile := filepath.Join(dir, "term")

	start := time.Now()
	p := tool(t, tg.Addrs[0], "lock", "--lease", "500ms", "--grace", "5s", "short", "--",
		"sh", "-c", `trap 'echo TERM > "$0"; exit 0' TERM; while :; do sleep 0.05; done`, termFile)
	if code := p.run(); code != exitLost {
		t.Fatalf("want %d\n%v", exitLost, p)
	}
	if elapsed := time.Since(start); elapsed < 500*time.Millisecond || elapsed > 4*time.Second {
		t.Errorf("ended after %v, want shortly after the 500ms lease", elapsed)
	}
	if b, _ := os.ReadFile(termFile); string(b) != "TERM\n" {
		t.Error("COMMAND did not get SIGTERM")
	}
	if !strings.Contains(p.stderr.String(), "lease of 500ms ended") {
		t.Errorf("stderr does not say why: %s", p.stderr.String())
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "short"); n != "0" {
		t.Error("the lock is held after its lease")
	}

	// A COMMAND that ignores SIGTERM gets SIGKILL after --grace, its children too.
	start = time.Now()
	p = tool(t, tg.Addrs[0], "lock", "--lease", "300ms", "--grace", "300ms", "stubborn", "--",
		"sh", "-c", `trap '' TERM; sleep 30; sleep 30`)
	if code := p.run(); code != exitLost {
		t.Fatalf("want %d\n%v", exitLost, p)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("ended after %v, want shortly after lease + grace (600ms)", elapsed)
	}
}

// TestLockForwardsSignals: SIGTERM to the tool reaches COMMAND; once it ends, the lock is released.
func TestLockForwardsSignals(t *testing.T) {
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	dir := t.TempDir()
	started, termFile := filepath.Join(dir, "started"), filepath.Join(dir, "term")
	p := tool(t, tg.Addrs[0], "lock", "sig", "--", "sh", "-c",
		`trap 'echo TERM > "$1"; exit 7' TERM; touch "$0"; while :; do sleep 0.05; done`, started, termFile).start()
	waitFor(t, 10*time.Second, "COMMAND started", func() bool { _, err := os.Stat(started); return err == nil })
	if n := testkit.DoString(t, rdb, "EXISTS", "sig"); n != "1" {
		t.Fatal("COMMAND runs but the lock is not held")
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 7 {
		t.Fatalf("want COMMAND's status 7\n%v", p)
	}
	if b, _ := os.ReadFile(termFile); string(b) != "TERM\n" {
		t.Error("COMMAND did not get SIGTERM")
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "sig"); n != "0" {
		t.Error("the lock is still held after the tool ended")
	}
}

// TestLockSignalWhileWaiting: a signal stops the wait; COMMAND never runs, nothing is left behind.
func TestLockSignalWhileWaiting(t *testing.T) {
	tg := testkit.Own(t)
	hold(t, tg, "held")
	marker := filepath.Join(t.TempDir(), "ran")
	p := tool(t, tg.Addrs[0], "lock", "held", "--", "touch", marker).start()
	waitFor(t, 10*time.Second, "the tool waits on the lock's channel", func() bool {
		out, _ := tg.Servers[0].Do("PUBSUB", "NUMSUB", "redisson_lock__channel:{held}")
		return strings.HasSuffix(strings.TrimSpace(out), "1")
	})
	p.signal(syscall.SIGINT)
	if code := p.wait(10 * time.Second); code != 128+int(syscall.SIGINT) {
		t.Fatalf("want %d\n%v", 128+int(syscall.SIGINT), p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("COMMAND ran")
	}
	tg.RequireNoSubscriptions(t)
}

// TestLockTakenAway: a lock deleted under a running COMMAND (a forced unlock, a failover) is found
// by the watchdog; COMMAND is stopped and the tool says so.
func TestLockTakenAway(t *testing.T) {
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	// With a 300ms watchdog the renewal comes every 100 ms.
	p := tool(t, tg.Addrs[0], "lock", "--watchdog", "300ms", "--grace", "1s", "away", "--", "sh", "-c", `touch "$0"; sleep 30`, started).start()
	waitFor(t, 10*time.Second, "COMMAND started", func() bool { _, err := os.Stat(started); return err == nil })
	testkit.Do(t, rdb, "DEL", "away")
	if code := p.wait(10 * time.Second); code != exitLost {
		t.Fatalf("want %d\n%v", exitLost, p)
	}
	if !strings.Contains(p.stderr.String(), "lost") {
		t.Errorf("stderr: %s", p.stderr.String())
	}
}

func TestLockSentinel(t *testing.T) {
	t.Parallel()
	st := redistest.StartSentinel(t)
	marker := filepath.Join(t.TempDir(), "ran")
	p := tool(t, "", "lock", "--sentinel", st.MasterName, "--addr", st.Sentinel.Addr, "sentinel-lock", "--", "touch", marker)
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("COMMAND did not run")
	}
	out, err := st.Master.Do("EXISTS", "sentinel-lock")
	if err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("lock left on the master: %q %v", out, err)
	}
}
