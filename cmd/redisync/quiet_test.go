package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// TestNotAcquiredQuietly: a run that does not acquire says nothing on stderr when -E 0 makes that
// no failure ("skip quietly": cron mails whatever a job writes) or when --quiet asks for silence,
// and the exit status still says what happened.
func TestNotAcquiredQuietly(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	ctx := context.Background()
	c := tg.Client(t)
	held := must(must(rlock.New(c, "quiet-lock")).Lock(ctx))
	t.Cleanup(func() { must(rlock.New(c, "quiet-lock")).Unlock(held) })
	sem := must(semaphore.NewExpirable(c, "quiet-sem"))
	must(sem.TrySetPermits(ctx, 1))
	ids := must(sem.Acquire(ctx, 1))
	t.Cleanup(func() { sem.Release(context.Background(), ids...) })
	latch := must(countdown.New(c, "quiet-latch"))
	must(latch.TrySetCount(ctx, 1))
	t.Cleanup(func() { latch.Delete(context.Background()) })

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"lock", "-w", "0.1", "-E", "0", "quiet-lock", "--", "true"}, 0},
		{[]string{"lock", "-n", "--quiet", "quiet-lock", "--", "true"}, exitNotAcquired},
		{[]string{"-q", "lock", "-n", "quiet-lock", "--", "true"}, exitNotAcquired},
		{[]string{"lock", "--fair", "-n", "-E", "0", "quiet-lock", "--", "true"}, 0},
		{[]string{"semaphore", "--permits", "1", "-n", "-E", "0", "quiet-sem", "--", "true"}, 0},
		{[]string{"semaphore", "--permits", "1", "-n", "-q", "quiet-sem", "--", "true"}, exitNotAcquired},
		{[]string{"latch", "quiet-latch", "await", "-w", "0.1", "-E", "0"}, 0},
		{[]string{"latch", "-q", "quiet-latch", "await", "--wait", "100ms"}, exitNotAcquired},
		{[]string{"latch", "-q", "quiet-latch", "set", "3"}, exitFailure},
	} {
		p := tool(t, tg.Addrs[0], tc.args...)
		if code := p.run(); code != tc.code || p.stderr.Len() != 0 {
			t.Errorf("want exit %d and nothing on stderr\n%v", tc.code, p)
		}
	}
	// Without them, the run says why it did not run COMMAND.
	p := tool(t, tg.Addrs[0], "lock", "-n", "quiet-lock", "--", "true")
	if code := p.run(); code != exitNotAcquired || !strings.Contains(p.stderr.String(), "not acquired") {
		t.Errorf("%v", p)
	}
	// --quiet keeps errors: a key of another kind is still explained.
	testkit.Do(t, tg.Redis(t), "SET", "quiet-string", "x")
	p = tool(t, tg.Addrs[0], "lock", "-q", "quiet-string", "--", "true")
	if code := p.run(); code != exitDataErr || !strings.Contains(p.stderr.String(), "quiet-string") {
		t.Errorf("%v", p)
	}
}

// TestWaitFlagsEverywhere: every subcommand that waits takes the same wait flags, -w and --wait in
// seconds or as a duration, -n and -E (latch await as lock does); those that do not wait refuse them.
func TestWaitFlagsEverywhere(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	ctx := context.Background()
	latch := must(countdown.New(tg.Client(t), "flags-latch"))
	must(latch.TrySetCount(ctx, 1))
	t.Cleanup(func() { latch.Delete(context.Background()) })
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"latch", "flags-latch", "await", "-w", "0.1"}, exitNotAcquired},
		{[]string{"latch", "-w", "100ms", "flags-latch", "await"}, exitNotAcquired},
		{[]string{"latch", "flags-latch", "await", "-n"}, exitNotAcquired},
		{[]string{"latch", "flags-latch", "await", "--nonblock", "-E", "3"}, 3},
		{[]string{"latch", "flags-latch", "await", "--conflict-exit-code", "4", "-w", "0"}, 4},
		{[]string{"latch", "flags-latch", "count", "-w", "1"}, exitUsage},
		{[]string{"latch", "flags-latch", "countdown", "-E", "0"}, exitUsage},
		{[]string{"latch", "flags-latch", "await", "-n", "-w", "2"}, exitUsage},
		{[]string{"latch", "flags-latch", "await", "-E", "256"}, exitUsage},
	} {
		p := tool(t, tg.Addrs[0], tc.args...)
		if code := p.run(); code != tc.code {
			t.Errorf("want exit %d\n%v", tc.code, p)
		}
	}
	check(t, latch.CountDown(ctx))
	p := tool(t, tg.Addrs[0], "latch", "flags-latch", "await", "-n")
	if code := p.run(); code != 0 {
		t.Errorf("an open latch: %v", p)
	}
}

// TestLibraryLogs: the library's log records (a hold lost, a renewal that failed) do not mix
// into the tool's stderr as slog's default lines: without --verbose they are left out (the tool
// says itself what matters: COMMAND was stopped because the lock was lost), with it each is a line
// of the tool's, prefixed as its own messages are.
func TestLibraryLogs(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	for _, verbose := range []bool{false, true} {
		args := []string{"lock", "--watchdog", "300ms", "--grace", "100ms", "logs-lock", "--", "sh", "-c",
			"redis-cli -p " + strings.Split(tg.Addrs[0], ":")[1] + " DEL logs-lock >/dev/null; sleep 30"}
		if verbose {
			args = append([]string{"-v"}, args...)
		}
		p := tool(t, tg.Addrs[0], args...)
		if code := p.run(); code != exitLost {
			t.Fatalf("%v", p)
		}
		out := p.stderr.String()
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(line, "redisync lock: ") {
				t.Errorf("verbose %v: a line that is not the tool's: %q\n%s", verbose, line, out)
			}
		}
		if library := strings.Contains(out, "redisync lock: library: "); library != verbose {
			t.Errorf("verbose %v: the library's records shown: %v\n%s", verbose, library, out)
		}
		testkit.Do(t, rdb, "DEL", "logs-lock")
	}
}
