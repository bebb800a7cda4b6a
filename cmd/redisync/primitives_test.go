package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// TestLockFairOrder: --fair waiters started 100 ms apart run in the order they started.
func TestLockFairOrder(t *testing.T) {
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	dir := t.TempDir()
	started, release, order := filepath.Join(dir, "started"), filepath.Join(dir, "release"), filepath.Join(dir, "order")
	holder := tool(t, tg.Addrs[0], "lock", "--fair", "q", "--", "sh", "-c",
		`touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`, started, release).start()
	waitFor(t, 10*time.Second, "the holder runs", func() bool { _, err := os.Stat(started); return err == nil })

	const n = 5
	waiters := make([]*proc, n)
	last := time.Now()
	for i := range n {
		time.Sleep(time.Until(last.Add(100 * time.Millisecond)))
		last = time.Now()
		waiters[i] = tool(t, tg.Addrs[0], "lock", "--fair", "q", "--", "sh", "-c", `echo $1 >> "$0"`, order, strconv.Itoa(i)).start()
		// On a loaded machine a process may take longer than 100 ms to start: the next one starts
		// only once this one is in line, so the test checks the lock's order, not the scheduler's.
		waitFor(t, 10*time.Second, "waiter in line", func() bool {
			return testkit.DoString(t, rdb, "LLEN", "redisson_lock_queue:{q}") == strconv.Itoa(i+1)
		})
	}
	os.WriteFile(release, nil, 0o644)
	if code := holder.wait(10 * time.Second); code != 0 {
		t.Fatalf("%v", holder)
	}
	for _, w := range waiters {
		if code := w.wait(10 * time.Second); code != 0 {
			t.Fatalf("%v", w)
		}
	}
	b, _ := os.ReadFile(order)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "0 1 2 3 4" {
		t.Errorf("ran in order %v, want 0 1 2 3 4", got)
	}
}

// TestLockReadWrite: readers share the lock, a writer waits for them, and readers wait for it.
func TestLockReadWrite(t *testing.T) {
	tg := testkit.Own(t)
	dir := t.TempDir()
	// Each reader waits (up to 10 s) until both readers are inside: only a shared lock lets it end.
	both := `touch "$0/in$1"; i=0; while [ ! -e "$0/in1" ] || [ ! -e "$0/in2" ]; do i=$((i+1)); [ $i -gt 500 ] && exit 9; sleep 0.02; done; while [ ! -e "$0/go" ]; do sleep 0.02; done`
	r1 := tool(t, tg.Addrs[0], "lock", "--read", "rw", "--", "sh", "-c", both, dir, "1").start()
	r2 := tool(t, tg.Addrs[0], "lock", "--read", "rw", "--", "sh", "-c", both, dir, "2").start()
	waitFor(t, 15*time.Second, "both readers inside", func() bool {
		_, e1 := os.Stat(filepath.Join(dir, "in1"))
		_, e2 := os.Stat(filepath.Join(dir, "in2"))
		return e1 == nil && e2 == nil
	})
	w := tool(t, tg.Addrs[0], "lock", "--write", "--wait", "200ms", "rw", "--", "true")
	if code := w.run(); code != exitNotAcquired {
		t.Fatalf("a writer got in among readers\n%v", w)
	}
	marker := filepath.Join(dir, "wrote")
	release := filepath.Join(dir, "release") // the writer holds the lock until it appears
	w = tool(t, tg.Addrs[0], "lock", "--write", "rw", "--", "sh", "-c",
		`touch "$0"; i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 1500 ] && exit 9; sleep 0.02; done`, marker, release).start()
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the writer ran while readers held the lock")
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	for _, p := range []*proc{r1, r2} {
		if code := p.wait(10 * time.Second); code != 0 {
			t.Fatalf("%v", p)
		}
	}
	waitFor(t, 10*time.Second, "the writer runs", func() bool { _, err := os.Stat(marker); return err == nil })
	r := tool(t, tg.Addrs[0], "lock", "--read", "--wait", "0", "rw", "--", "true")
	if code := r.run(); code != exitNotAcquired {
		t.Fatalf("a reader got in while the writer held the lock\n%v", r)
	}
	os.WriteFile(release, nil, 0o644)
	if code := w.wait(10 * time.Second); code != 0 {
		t.Fatalf("%v", w)
	}
	for _, args := range [][]string{{"--read", "--write"}, {"--fair", "--read"}} {
		p := tool(t, tg.Addrs[0], append(append([]string{"lock"}, args...), "rw", "--", "true")...)
		if code := p.run(); code != exitUsage {
			t.Errorf("%v: want %d\n%v", args, exitUsage, p)
		}
	}
}

// semaphoreScript records the most holders it saw inside (each creates its own file, so the last of
// k holders inside at once counts at least k). It stays until it has seen 3 inside at once, or until
// all 10 runs have entered (no more can come), or a minute: a holder that left before the next one
// entered would show no overlap, and processes start slowly on a busy machine.
const semaphoreScript = `touch "$D/in/$$" "$D/entered/$$"; most=$(ls "$D/in" | wc -l); i=0
while [ "$most" -lt 3 ] && [ "$(ls "$D/entered" | wc -l)" -lt 10 ] && [ "$i" -lt 1200 ]; do
  sleep 0.05; i=$((i + 1)); n=$(ls "$D/in" | wc -l); [ "$n" -gt "$most" ] && most=$n
done
echo "$most" >> "$D/counts"; rm "$D/in/$$"`

// TestSemaphoreAtMostN: 10 processes, 3 permits: never more than 3 inside, and 3 do get in at once.
func TestSemaphoreAtMostN(t *testing.T) {
	tg := testkit.Own(t)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	os.Mkdir(filepath.Join(dir, "entered"), 0o755)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := tool(t, tg.Addrs[0], "semaphore", "--permits", "3", "pool", "--", "sh", "-c", semaphoreScript)
			p.cmd.Env = append(p.cmd.Env, "D="+dir)
			if code := p.run(); code != 0 {
				t.Errorf("%v", p)
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "counts"))
	counts := strings.Fields(string(b))
	most := 0
	for _, c := range counts {
		n, _ := strconv.Atoi(c)
		most = max(most, n)
	}
	if len(counts) != 10 || most != 3 {
		t.Errorf("%d runs, at most %d inside at once (%v); want 10 runs, 3 at once", len(counts), most, counts)
	}
	rdb := tg.Redis(t)
	if got := testkit.DoString(t, rdb, "GET", "pool"); got != "3" {
		t.Errorf("available permits after every run: %s, want 3", got)
	}
	if got := testkit.DoString(t, rdb, "ZCARD", "{pool}:timeout"); got != "0" {
		t.Errorf("%s permits still acquired", got)
	}
}

// TestSemaphoreKilledToolFreesPermit: a killed tool's permit comes back within its lease, or within
// the watchdog timeout without one.
func TestSemaphoreKilledToolFreesPermit(t *testing.T) {
	tg := testkit.Own(t)
	// Leases long enough that a tool started on a busy machine still finds the permit taken.
	const lease = 5 * time.Second
	for _, flags := range [][]string{{"--lease", lease.String()}, {"--watchdog", lease.String()}} {
		t.Run(flags[0], func(t *testing.T) {
			name := "one" + flags[0]
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			args := append(append([]string{"semaphore", "--permits", "1"}, flags...), name, "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
			p := tool(t, tg.Addrs[0], args...).start()
			waitFor(t, 10*time.Second, "COMMAND started", func() bool { _, err := os.Stat(started); return err == nil })
			// Held past a third of the lease: without --lease the permit has been renewed by now.
			time.Sleep(lease/3 + 300*time.Millisecond)
			p.signal(syscall.SIGKILL)
			p.wait(10 * time.Second)
			killed := time.Now()

			busy := tool(t, tg.Addrs[0], "semaphore", "--permits", "1", "--wait", "0", name, "--", "true")
			if code := busy.run(); code != exitNotAcquired {
				t.Fatalf("the killed tool's permit was free at once\n%v", busy)
			}
			next := tool(t, tg.Addrs[0], "semaphore", "--permits", "1", "--wait", "30s", name, "--", "true")
			if code := next.run(); code != 0 {
				t.Fatalf("%v", next)
			}
			// Within the lease, and a margin for a busy machine: not held until some later clean-up.
			if since := time.Since(killed); since > lease+5*time.Second {
				t.Errorf("the permit came back %v after the kill, want within the %v lease", since, lease)
			}
		})
	}
}

// TestSemaphoreLease: a COMMAND outliving the permit's fixed lease is stopped, status 76; a busy
// semaphore makes --wait give up with 75.
func TestSemaphoreLease(t *testing.T) {
	tg := testkit.Own(t)
	start := time.Now()
	p := tool(t, tg.Addrs[0], "semaphore", "--permits", "1", "--lease", "500ms", "--grace", "1s", "short", "--", "sleep", "30")
	if code := p.run(); code != exitLost {
		t.Fatalf("want %d\n%v", exitLost, p)
	}
	if elapsed := time.Since(start); elapsed > 4*time.Second {
		t.Errorf("ended after %v, want shortly after the 500ms lease", elapsed)
	}

	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	h := tool(t, tg.Addrs[0], "semaphore", "--permits", "1", "busy", "--", "sh", "-c",
		`touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`, started, release).start()
	waitFor(t, 10*time.Second, "holder runs", func() bool { _, err := os.Stat(started); return err == nil })
	t0 := time.Now()
	w := tool(t, tg.Addrs[0], "semaphore", "--permits", "1", "--wait", "200ms", "busy", "--", "true")
	if code := w.run(); code != exitNotAcquired {
		t.Fatalf("want %d\n%v", exitNotAcquired, w)
	}
	if elapsed := time.Since(t0); elapsed < 200*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("gave up after %v, want about 200ms", elapsed)
	}
	os.WriteFile(release, nil, 0o644)
	if code := h.wait(10 * time.Second); code != 0 {
		t.Fatalf("%v", h)
	}
	p = tool(t, tg.Addrs[0], "semaphore", "busy", "--", "true")
	if code := p.run(); code != exitUsage {
		t.Errorf("without --permits: want %d\n%v", exitUsage, p)
	}
}

// TestLatch: set, count, countdown and await across processes.
func TestLatch(t *testing.T) {
	tg := testkit.Own(t)
	addr := tg.Addrs[0]
	latch := func(args ...string) *proc { return tool(t, addr, append([]string{"latch"}, args...)...) }
	expect := func(p *proc, code int, stdout string) {
		t.Helper()
		if got := p.run(); got != code || p.stdout.String() != stdout {
			t.Errorf("want exit %d, stdout %q\n%v", code, stdout, p)
		}
	}
	expect(latch("gate", "count"), 0, "0\n")
	expect(latch("gate", "await", "--wait", "0"), 0, "") // never set: open
	expect(latch("gate", "set", "2"), 0, "")
	expect(latch("gate", "set", "5"), exitFailure, "") // still counting down
	expect(latch("gate", "count"), 0, "2\n")

	t0 := time.Now()
	expect(latch("gate", "await", "--wait", "200ms"), exitNotAcquired, "")
	if elapsed := time.Since(t0); elapsed < 200*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("gave up after %v, want about 200ms", elapsed)
	}

	var waiters []*proc
	for range 3 {
		waiters = append(waiters, latch("gate", "await").start())
	}
	waitFor(t, 10*time.Second, "waiters subscribed", func() bool {
		out, _ := tg.Servers[0].Do("PUBSUB", "NUMSUB", "redisson_countdownlatch__channel__{gate}")
		return strings.HasSuffix(strings.TrimSpace(out), "3")
	})
	expect(latch("gate", "countdown"), 0, "")
	time.Sleep(200 * time.Millisecond)
	for _, w := range waiters {
		select {
		case <-w.done:
			t.Fatalf("a waiter returned at count 1\n%v", w)
		default:
		}
	}
	expect(latch("--addr", addr, "gate", "countdown"), 0, "")
	for _, w := range waiters {
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("%v", w)
		}
	}
	expect(latch("gate", "count"), 0, "0\n")

	for _, args := range [][]string{{"gate"}, {"gate", "set"}, {"gate", "set", "0"}, {"gate", "set", "x"}, {"gate", "open"}, {"gate", "count", "--wait", "1s"}, {"gate", "count", "extra"}} {
		p := latch(args...)
		if code := p.run(); code != exitUsage {
			t.Errorf("latch %q: want %d\n%v", args, exitUsage, p)
		}
	}
}
