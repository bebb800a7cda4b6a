package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/semaphore"
)

// TestSemaphorePermits: --permits N on a semaphore that has another number says so (it was silently
// ignored), and --update sets or adds permits in place.
func TestSemaphorePermits(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	addr := tg.Addrs[0]
	ctx := context.Background()
	e := must(semaphore.NewExpirable(tg.Client(t), "permits-sem"))
	must(e.TrySetPermits(ctx, 2))
	ids := must(e.Acquire(ctx, 1))

	p := tool(t, addr, "semaphore", "--permits", "5", "permits-sem", "--", "true")
	if code := p.run(); code != 0 || !strings.Contains(p.stderr.String(), `"permits-sem" has 2 permits, not the 5 of --permits`) {
		t.Errorf("a semaphore of 2 permits used with --permits 5: %v", p)
	}
	p = tool(t, addr, "semaphore", "--permits", "2", "permits-sem", "--", "true")
	if code := p.run(); code != 0 || p.stderr.Len() != 0 {
		t.Errorf("the right number: %v", p)
	}
	p = tool(t, addr, "semaphore", "-q", "--permits", "5", "permits-sem", "--", "true")
	if code := p.run(); code != 0 || p.stderr.Len() != 0 {
		t.Errorf("--quiet: %v", p)
	}

	for _, tc := range []struct {
		args      []string
		out       string
		permits   int64
		available int64
	}{
		{[]string{"--update", "--permits", "5", "permits-sem"}, "permits-sem: 5 permits (4 available, 1 acquired)\n", 5, 4},
		{[]string{"--update", "permits-sem", "--add-permits", "-2"}, "permits-sem: 3 permits (2 available, 1 acquired)\n", 3, 2},
		{[]string{"--update", "--add-permits=1", "permits-sem"}, "permits-sem: 4 permits (3 available, 1 acquired)\n", 4, 3},
	} {
		p := tool(t, addr, append([]string{"semaphore"}, tc.args...)...)
		if code := p.run(); code != 0 || p.stdout.String() != tc.out {
			t.Errorf("want %q\n%v", tc.out, p)
		}
		if n := must(e.Permits(ctx)); n != tc.permits {
			t.Errorf("%q: %d permits, want %d", tc.args, n, tc.permits)
		}
		if n := must(e.Available(ctx)); n != tc.available {
			t.Errorf("%q: %d available, want %d", tc.args, n, tc.available)
		}
	}
	p = tool(t, addr, "semaphore", "--json", "--update", "--permits", "2", "permits-sem")
	var got struct {
		Name                         string
		Permits, Available, Acquired int64
	}
	if code := p.run(); code != 0 || json.Unmarshal(p.stdout.Bytes(), &got) != nil ||
		got.Name != "permits-sem" || got.Permits != 2 || got.Available != 1 || got.Acquired != 1 {
		t.Errorf("--json: %+v\n%v", got, p)
	}
	check(t, e.Release(ctx, ids...))

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--update", "--permits", "3", "permits-none"}, exitFailure, "has no permits set; nothing was changed"},
		{[]string{"--update", "permits-sem"}, exitUsage, "--update takes --permits N or --add-permits N"},
		{[]string{"--update", "--permits", "3", "--add-permits", "1", "permits-sem"}, exitUsage, "--update takes --permits N or --add-permits N"},
		{[]string{"--update", "--add-permits", "0", "permits-sem"}, exitUsage, "--add-permits 0"},
		{[]string{"--update", "--permits", "3", "permits-sem", "--", "true"}, exitUsage, "--update runs no COMMAND"},
		{[]string{"--update", "--permits", "3", "-w", "1", "permits-sem"}, exitUsage, "go with acquiring"},
		{[]string{"--add-permits", "1", "permits-sem", "--", "true"}, exitUsage, "--add-permits goes with --update"},
	} {
		p := tool(t, addr, append([]string{"semaphore"}, tc.args...)...)
		if code := p.run(); code != tc.code || !strings.Contains(p.stderr.String(), tc.msg) {
			t.Errorf("want exit %d and %q\n%v", tc.code, tc.msg, p)
		}
	}
	if n := testkit.DoString(t, tg.Redis(t), "EXISTS", "permits-none"); n != "0" {
		t.Error("--update created a semaphore")
	}
	testkit.Do(t, tg.Redis(t), "SET", "permits-string", "hello")
	p = tool(t, addr, "semaphore", "--update", "--permits", "3", "permits-string")
	if code := p.run(); code != exitDataErr || testkit.DoString(t, tg.Redis(t), "GET", "permits-string") != "hello" {
		t.Errorf("a string: %v", p)
	}
}
