package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

// TestNoDamage: no subcommand changes or deletes a key that is not its primitive's: it refuses with
// status 65 (data error) or 64 (a name in the primitives' namespace), and the key is as it was.
func TestNoDamage(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	testkit.Do(t, rdb, "SET", "app-string", "hello")
	testkit.Do(t, rdb, "SET", "app-zero", "0")
	testkit.Do(t, rdb, "SET", "app-negative", "-3")
	testkit.Do(t, rdb, "HSET", "app-hash", "field", "hash-content")
	testkit.Do(t, rdb, "RPUSH", "app-list", "a")
	testkit.Do(t, rdb, "SET", "redisson_lock_token:{fenced}", "41")
	snapshot := func() string {
		var b strings.Builder
		for _, k := range []string{"app-string", "app-zero", "app-negative", "redisson_lock_token:{fenced}"} {
			b.WriteString(testkit.DoString(t, rdb, "GET", k) + " ")
		}
		b.WriteString(testkit.DoString(t, rdb, "HGETALL", "app-hash") + " ")
		b.WriteString(testkit.DoString(t, rdb, "LRANGE", "app-list", "0", "-1") + " ")
		n, _ := tg.Servers[0].Do("DBSIZE")
		b.WriteString(n)
		return b.String()
	}
	before := snapshot()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"latch", "app-string", "countdown"}, exitDataErr},
		{[]string{"latch", "app-zero", "countdown"}, exitDataErr},
		{[]string{"latch", "app-negative", "countdown"}, exitDataErr},
		{[]string{"latch", "app-hash", "countdown"}, exitDataErr},
		{[]string{"latch", "app-list", "set", "3"}, exitDataErr},
		{[]string{"latch", "app-string", "await", "--wait", "0"}, exitDataErr},
		{[]string{"latch", "redisson_lock_token:{fenced}", "countdown"}, exitUsage},
		{[]string{"lock", "redisson_lock_token:{fenced}", "--", "true"}, exitUsage},
		{[]string{"semaphore", "--permits", "1", "redisync_holder:{x}", "--", "true"}, exitUsage},
		{[]string{"lock", "app-string", "--", "true"}, exitDataErr},
		{[]string{"lock", "app-hash", "--", "true"}, exitDataErr},
		{[]string{"lock", "-w", "1", "--fair", "app-hash", "--", "true"}, exitDataErr},
		{[]string{"lock", "--write", "app-hash", "--", "true"}, exitDataErr},
		{[]string{"rate", "--rate", "1/s", "app-hash", "--", "true"}, exitDataErr},
		{[]string{"rate", "--rate", "1/s", "app-string", "--", "true"}, exitDataErr},
		{[]string{"rate", "--update", "--rate", "1/s", "app-hash"}, exitDataErr},
		{[]string{"rate", "--update", "--rate", "1/s", "app-string"}, exitDataErr},
		{[]string{"lock", "--fair", "app-list", "--", "true"}, exitDataErr},
		{[]string{"lock", "--read", "app-string", "--", "true"}, exitDataErr},
		{[]string{"semaphore", "--permits", "2", "app-string", "--", "true"}, exitDataErr},
		{[]string{"semaphore", "--permits", "2", "app-hash", "--", "true"}, exitDataErr},
	} {
		marker := filepath.Join(t.TempDir(), "ran")
		args := tc.args
		if args[len(args)-1] == "true" {
			args = append(args[:len(args)-1:len(args)-1], "touch", marker)
		}
		p := tool(t, tg.Addrs[0], args...)
		if code := p.run(); code != tc.code {
			t.Errorf("want %d\n%v", tc.code, p)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%q: COMMAND ran", tc.args)
		}
		if strings.Contains(p.stderr.String(), "hello") || strings.Contains(p.stderr.String(), "hash-content") {
			t.Errorf("a message shows the key's content: %s", p.stderr.String())
		}
		if after := snapshot(); after != before {
			t.Fatalf("%q changed Redis:\nbefore %s\nafter  %s", tc.args, before, after)
		}
	}
	// The library's script refuses on its own, atomically: the check before it is not the only one.
	down := lua.Load("count.lua", "once.lua", "countdown_down.lua")
	if err := down.Exec(context.Background(), rdb, []string{"app-zero", "ch", "memo:"}, []string{"publish", "1"}).Error(); err == nil ||
		!strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("countdown_down.lua on a foreign key: %v", err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("the script changed Redis:\nbefore %s\nafter  %s", before, after)
	}
}

// TestWaitFlags: --wait in plain seconds as flock's -w, -n, -E, --version.
func TestWaitFlags(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	hold(t, tg, "busy-flags")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"lock", "--wait", "0.2", "busy-flags", "--", "true"}, exitNotAcquired},
		{[]string{"lock", "-w", "0", "busy-flags", "--", "true"}, exitNotAcquired},
		{[]string{"lock", "-n", "busy-flags", "--", "true"}, exitNotAcquired},
		{[]string{"lock", "-n", "-E", "0", "busy-flags", "--", "true"}, 0},
		{[]string{"lock", "-E", "3", "--wait", "0", "busy-flags", "--", "true"}, 3},
		{[]string{"semaphore", "--permits", "1", "-n", "-E", "9", "sem-flags", "--", "sleep", "0"}, 0},
		{[]string{"lock", "-n", "--wait", "2", "busy-flags", "--", "true"}, exitUsage},
		{[]string{"lock", "-E", "300", "busy-flags", "--", "true"}, exitUsage},
		{[]string{"lock", "--wait", "soon", "busy-flags", "--", "true"}, exitUsage},
	} {
		p := tool(t, tg.Addrs[0], tc.args...)
		if code := p.run(); code != tc.code {
			t.Errorf("want %d\n%v", tc.code, p)
		}
	}
	p := tool(t, tg.Addrs[0], "--version")
	if code := p.run(); code != 0 || !strings.HasPrefix(p.stdout.String(), "redisync ") {
		t.Errorf("%v", p)
	}
}

// TestFencingEnv: lock --fencing gives COMMAND a token that grows with every acquisition.
func TestFencingEnv(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	out := filepath.Join(t.TempDir(), "tokens")
	for _, fair := range []bool{false, false, true} {
		args := []string{"lock", "--fencing", "fenced", "--", "sh", "-c", `echo "$REDISYNC_FENCING_TOKEN" >> "$0"`, out}
		if fair {
			args = append([]string{"lock", "--fair"}, args[1:]...)
			args[3] = "fenced-fair"
		}
		if p := tool(t, tg.Addrs[0], args...); p.run() != 0 {
			t.Fatalf("%v", p)
		}
	}
	got := strings.Fields(mustRead(t, out))
	var tokens []int64
	for _, s := range got {
		n, _ := strconv.ParseInt(s, 10, 64)
		tokens = append(tokens, n)
	}
	if len(tokens) != 3 || tokens[0] <= 0 || tokens[1] != tokens[0]+1 || tokens[2] <= 0 {
		t.Errorf("tokens %q, want two of the lock's counter, one after the other, and the fair lock's", got)
	}
}

// TestInspectNamesHolder: inspect shows the host, pid and command of the tool that holds a lock or
// a permit; the entry goes with the hold.
func TestInspectNamesHolder(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	script := `touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`
	l := tool(t, tg.Addrs[0], "lock", "--watchdog", "3s", "report", "--", "sh", "-c", script, started+"1", release).start()
	s := tool(t, tg.Addrs[0], "semaphore", "--permits", "2", "pool", "--", "sh", "-c", script, started+"2", release).start()
	waitFor(t, 10*time.Second, "both hold", func() bool {
		_, e1 := os.Stat(started + "1")
		_, e2 := os.Stat(started + "2")
		return e1 == nil && e2 == nil
	})
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name string
		pid  int
	}{{"report", l.cmd.Process.Pid}, {"pool", s.cmd.Process.Pid}} {
		p := tool(t, tg.Addrs[0], "inspect", tc.name)
		want := "pid " + strconv.Itoa(tc.pid) + " on " + host + " (sh)"
		if code := p.run(); code != 0 || !strings.Contains(p.stdout.String(), want) {
			t.Errorf("want %q\n%v", want, p)
		}
		j := tool(t, tg.Addrs[0], "inspect", "--json", tc.name)
		j.run()
		var st state
		json.Unmarshal(j.stdout.Bytes(), &st)
		var who *holderInfo
		if len(st.Holders) == 1 {
			who = st.Holders[0].Who
		} else if len(st.Permits) == 1 {
			who = st.Permits[0].Who
		}
		if who == nil || who.PID != tc.pid || who.Host != host {
			t.Errorf("json: %s", j.stdout.String())
		}
		// The entry has the hold's TTL, and its slot.
		if ttl, _ := strconv.Atoi(testkit.DoString(t, rdb, "PTTL", "redisync_holder:{"+tc.name+"}")); ttl <= 0 {
			t.Errorf("the holder entry of %s has PTTL %d", tc.name, ttl)
		}
	}
	os.WriteFile(release, nil, 0o644)
	for _, p := range []*proc{l, s} {
		if code := p.wait(10 * time.Second); code != 0 {
			t.Fatalf("%v", p)
		}
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "redisync_holder:{report}", "redisync_holder:{pool}"); n != "0" {
		t.Error("holder entries left after release")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
