package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
)

// loadScript fills a server as an application would: a hash of 300 000 fields and 100 000 keys of
// every type, in one script, so that the test spends its time on the tool, not on loading.
const loadScript = `
for i = 1, 300000, 1000 do
  local a = {}
  for j = i, i + 999 do a[#a+1] = 'field' .. j; a[#a+1] = 'value-of-field-' .. j end
  redis.call('hset', 'bighash', unpack(a))
end
for i = 1, 100000 do
  local m = i % 5
  if m == 0 then redis.call('set', 'app:s' .. i, 'value' .. i)
  elseif m == 1 then redis.call('hset', 'app:h' .. i, 'name', 'n' .. i, 'age', '3')
  elseif m == 2 then redis.call('zadd', 'app:z' .. i, i, 'm')
  elseif m == 3 then redis.call('rpush', 'app:l' .. i, 'a')
  else redis.call('sadd', 'app:t' .. i, 'a') end
end
-- a few primitives, as a Java process leaves them: a lock, a fair lock with its queue, a
-- read-write lock
redis.call('hset', 'prod-lock', 'java-uuid:1', '1')
redis.call('pexpire', 'prod-lock', 600000)
redis.call('hset', 'prod-fair', 'java-uuid:2', '1')
redis.call('rpush', 'redisson_lock_queue:{prod-fair}', 'java-uuid:3')
redis.call('zadd', 'redisson_lock_timeout:{prod-fair}', '99999999999999', 'java-uuid:3')
redis.call('hset', 'prod-rw', 'mode', 'read', 'java-uuid:4', '1')
return redis.call('dbsize')
`

// commandCalls returns the commands the server ran since the last CONFIG RESETSTAT, left out those
// the test itself sends.
func commandCalls(t *testing.T, s *redistest.Server) (total int64, by map[string]int64) {
	t.Helper()
	out, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	by = map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found || strings.HasPrefix(name, "config") || strings.HasPrefix(name, "slowlog") || name == "info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		by[name] += n
		total += n
	}
	return total, by
}

// measureEnv makes the test binary run the command in its arguments and write the command's peak
// resident memory, in bytes, to the file the variable names (see measured).
const measureEnv = "REDISYNC_TEST_MEASURE_RSS"

// measure runs argv with the process's stdin, stdout and stderr, writes its peak resident memory to
// out, and returns its exit status.
func measure(out string, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	os.WriteFile(out, []byte(strconv.FormatInt(rss, 10)), 0o644)
	return exitStatus(cmd.ProcessState)
}

// measured prepares the tool with args as tool does, run by a fresh copy of the test binary that
// measures its peak memory, which it returns once the process has ended. Linux counts in a process's
// peak the memory of the process that started it, up to its exec, for Go starts processes with
// vfork: the test binary's, large and growing, would hide the tool's; a fresh copy's is small.
func measured(t *testing.T, addr string, args ...string) (*proc, func() int64) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rss")
	p := tool(t, addr, args...)
	p.cmd.Path, p.cmd.Args = self, append([]string{self, bin}, args...)
	p.cmd.Env = append(p.cmd.Env, measureEnv+"="+out)
	return p, func() int64 {
		n, _ := strconv.ParseInt(mustRead(t, out), 10, 64)
		return n
	}
}

// TestListInspectBounded: on a server that holds an application's data, list and inspect send at
// most 3 commands per key, each of a cost that does not grow with the data (what the commands are,
// not how long they took: a busy machine can slow any command), and the tool's memory stays under
// 100 MB whatever a key's size.
func TestListInspectBounded(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	s := tg.Servers[0]
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a busy machine loads slowly
	defer cancel()
	out, err := s.DoContext(ctx, "EVAL", loadScript, "0")
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	t.Logf("loaded %d keys in %v", keys, time.Since(start))
	// SLOWLOG keeps every command the tool sends: each is checked for bounded work, whatever time
	// a busy machine made it take.
	if _, err := s.Do("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100000"); err != nil {
		t.Fatal(err)
	}
	// run runs the tool with args, alone on the server, and returns what the server saw of it.
	rdb := tg.Redis(t)
	run := func(args []string, code int, want string) (p *proc, calls int64, rss int64, slow []string) {
		t.Helper()
		for _, cmd := range [][]string{{"CONFIG", "RESETSTAT"}, {"SLOWLOG", "RESET"}} {
			if _, err := s.Do(cmd...); err != nil {
				t.Fatal(err)
			}
		}
		p, maxRSS := measured(t, tg.Addrs[0], args...)
		if got := p.run(); got != code || !strings.Contains(p.stdout.String(), want) {
			t.Fatalf("want exit %d and %q\n%v", code, want, p)
		}
		calls, by := commandCalls(t, s)
		rss = maxRSS()
		slow = unbounded(t, rdb)
		t.Logf("%q: %d commands (%.3f per key), %v, max RSS %.1f MB: %v", args, calls, float64(calls)/float64(keys),
			p.took.Round(time.Millisecond), float64(rss)/(1<<20), by)
		return p, calls, rss, slow
	}
	for _, tc := range []struct {
		args     []string
		code     int
		want     string
		maxCalls int64 // at most, in all
	}{
		{[]string{"list", "--json"}, exitOK, `"name": "prod-fair"`, 3 * keys},
		{[]string{"list", "big*"}, exitOK, "NAME", 3 * keys},
		{[]string{"list", "prod-*"}, exitOK, "prod-rw", 3 * keys},
		{[]string{"inspect", "bighash"}, exitDataErr, "a hash of 300000 elements", 20},
		{[]string{"inspect", "--json", "bighash"}, exitDataErr, `"size": 300000`, 20},
		{[]string{"inspect", "prod-fair"}, exitOK, "1. java-uuid:3", 20},
		{[]string{"inspect", "app:z2"}, exitDataErr, "a zset of 1 elements", 20},
	} {
		p, calls, rss, slow := run(tc.args, tc.code, tc.want)
		if len(slow) > 0 {
			t.Errorf("%q sent commands whose cost grows with the data: %q", tc.args, slow)
		}
		if calls > tc.maxCalls {
			t.Errorf("%q sent %d commands for %d keys, want at most %d", tc.args, calls, keys, tc.maxCalls)
		}
		if rss > 100<<20 {
			t.Errorf("%q grew to %d MB", tc.args, rss>>20)
		}
		if tc.args[1] == "--json" && tc.args[0] == "list" {
			var found []listed
			if err := json.Unmarshal(p.stdout.Bytes(), &found); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]string{}
			for _, l := range found {
				kinds[l.Name] = l.Kind
			}
			if fmt.Sprint(kinds) != "map[prod-fair:fair lock prod-lock:lock prod-rw:read-write lock]" {
				t.Errorf("list found %v, want the lock, the fair lock and the read-write lock alone", kinds)
			}
		}
	}
	if got := testkit.DoString(t, tg.Redis(t), "HLEN", "bighash"); got != "300000" {
		t.Errorf("bighash changed: %s fields", got)
	}
}

// TestListStops: past --max-keys, list says that its list is incomplete, and exits 1.
func TestListStops(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	if _, err := tg.Servers[0].Do("EVAL", "for i = 1, 5000 do redis.call('set', 'k' .. i, i) end", "0"); err != nil {
		t.Fatal(err)
	}
	p := tool(t, tg.Addrs[0], "list", "--max-keys", "1000")
	if code := p.run(); code != exitFailure || !strings.Contains(p.stderr.String(), "incomplete") {
		t.Fatalf("%v", p)
	}
	if p := tool(t, tg.Addrs[0], "list", "--max-keys", "0"); p.run() != exitUsage {
		t.Fatalf("%v", p)
	}
}

// TestExitCodes: every subcommand gives the same status for the same failure: 77 when Redis
// refuses (NOPERM) or the password is wrong, 65 for a key of another kind (list leaves such keys
// out: 0), 69 when the server is stopped. Nothing is left behind in Redis.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--user", "app", "on", ">app-pw", "~*", "&*", "+@all",
		"--user", "bare", "on", ">bare-pw", "~*", "&*", "-@all", "+hello", "+auth", "+ping")
	stopped := redistest.Start(t)
	stoppedAddr := stopped.Addr
	stopped.Close()
	if _, err := s.Do("HSET", "app-hash", "field", "value"); err != nil {
		t.Fatal(err)
	}
	subcommands := [][]string{
		{"lock", "NAME", "--", "true"},
		{"lock", "--fair", "NAME", "--", "true"},
		{"lock", "--write", "NAME", "--", "true"},
		{"semaphore", "--permits", "1", "NAME", "--", "true"},
		{"rate", "--rate", "1/s", "NAME", "--", "true"},
		{"latch", "NAME", "countdown"},
		{"latch", "NAME", "await", "--wait", "1s"},
		{"semaphore", "--update", "--add-permits", "1", "NAME"},
		{"inspect", "NAME"},
		{"list", "NAME"},
		{"unlock", "--force", "NAME"},
		{"demo", "--addr", "ADDR", "--buyers", "2", "--stock", "1", "--clients", "1"},
	}
	for _, tc := range []struct {
		what, addr, user, password, name string
		code, listCode                   int
	}{
		{"NOPERM", s.Addr, "bare", "bare-pw", "exit-codes", exitNoPerm, exitNoPerm},
		{"wrong password", s.Addr, "app", "wrong", "exit-codes", exitNoPerm, exitNoPerm},
		{"foreign key", s.Addr, "app", "app-pw", "app-hash", exitDataErr, exitOK},
		{"stopped server", stoppedAddr, "app", "app-pw", "exit-codes", exitUnavailable, exitUnavailable},
	} {
		for _, sub := range subcommands {
			if sub[0] == "demo" && tc.name == "app-hash" {
				continue // it takes no NAME
			}
			args := append([]string{sub[0], "--user", tc.user}, sub[1:]...)
			for i, a := range args {
				switch a {
				case "NAME":
					args[i] = tc.name
				case "ADDR": // the demo's server is an embedded one unless --addr says otherwise
					args[i] = tc.addr
				}
			}
			p := tool(t, tc.addr, args...)
			p.cmd.Env = append(p.cmd.Env, passwordEnv+"="+tc.password)
			want := tc.code
			if sub[0] == "list" {
				want = tc.listCode
			}
			if code := p.run(); code != want {
				t.Errorf("%s: want %d\n%v", tc.what, want, p)
			}
		}
	}
	if keys, _ := s.Do("KEYS", "*"); strings.TrimSpace(keys) != "app-hash" {
		t.Errorf("left in Redis: %q", keys)
	}
}

// TestPausedServer: a wait bound bounds connecting too; a server that does not answer at all (CLIENT
// PAUSE ... ALL) cannot keep the tool past it.
func TestPausedServer(t *testing.T) {
	tg := testkit.Own(t)
	marker := filepath.Join(t.TempDir(), "ran")
	// Paused past every run, each given at most 10 s (under ALL, not even CLIENT UNPAUSE is served):
	// none can be answered.
	if _, err := tg.Servers[0].Do("CLIENT", "PAUSE", "120000", "ALL"); err != nil {
		t.Fatal(err)
	}
	// Each run's wait bound, or the least time a bounded wait gives the connection (-n).
	const bound = time.Second
	for _, args := range [][]string{
		{"lock", "-w", "1", "paused", "--", "touch", marker},
		{"lock", "-n", "paused", "--", "touch", marker},
		{"semaphore", "--permits", "1", "-w", "1", "paused-sem", "--", "touch", marker},
		{"rate", "--rate", "1/s", "-w", "1", "paused-rate", "--", "touch", marker},
		{"latch", "paused-latch", "await", "--wait", "1s"},
	} {
		// What starting and ending the tool takes on this machine now, apart from its work: on a
		// busy machine, seconds of a race-enabled build.
		own := tool(t, tg.Addrs[0], "version")
		if code := own.run(); code != 0 {
			t.Fatalf("version: exit %d\n%v", code, own)
		}
		p := tool(t, tg.Addrs[0], args...)
		code := p.start().wait(10 * time.Second)
		t.Logf("%q: exit %d after %v (the tool alone: %v)", args, code, p.took, own.took)
		if code != exitNotAcquired && code != exitUnavailable {
			t.Errorf("on a paused server: exit %d, want 75 or 69\n%v", code, p)
		}
		if limit := bound + own.took + testkit.Margin; p.took > limit {
			t.Errorf("on a paused server: exit after %v, want within the %v bound (%v with the tool's own start and exit, and testkit.Margin)\n%v",
				p.took, bound, limit, p)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("COMMAND ran")
	}
}

// unbounded returns the commands in SLOWLOG (every command, as the test sets it) whose work can grow
// with the data: any but those that
// touch one key's metadata or element, and scans and ranges of at most 1000 elements.
func unbounded(t *testing.T, rdb rueidis.Client) []string {
	t.Helper()
	entries, err := rdb.Do(context.Background(), rdb.B().SlowlogGet().Count(-1).Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		parts, err := e.ToArray()
		if err != nil || len(parts) < 4 {
			t.Fatalf("SLOWLOG entry %v: %v", e, err)
		}
		args, err := parts[3].AsStrSlice()
		if err != nil || len(args) == 0 {
			t.Fatalf("SLOWLOG entry %v: %v", e, err)
		}
		if !boundedCommand(args) {
			out = append(out, strings.Join(args, " "))
		}
	}
	return out
}

// boundedCommand reports whether the command args does work that does not grow with the data.
func boundedCommand(args []string) bool {
	small := func(s string) bool { n, err := strconv.Atoi(s); return err == nil && n <= 1000 }
	switch strings.ToUpper(args[0]) {
	case "PING", "HELLO", "TIME", "CLUSTER", "TYPE", "PTTL", "TTL", "EXISTS", "LLEN", "HLEN", "ZCARD",
		"SCARD", "STRLEN", "GET", "GETRANGE", "HGET", "HMGET", "ZSCORE", "PUBSUB", "CONFIG", "SLOWLOG", "INFO",
		"ZCOUNT": // O(log N)
		return true
	case "ZRANGEBYSCORE": // O(log N) and the entries asked for
		for i := 1; i+2 < len(args); i++ {
			if strings.EqualFold(args[i], "LIMIT") {
				return small(args[i+2])
			}
		}
		return false
	case "SCAN", "HSCAN", "SSCAN", "ZSCAN":
		for i := 1; i+1 < len(args); i++ {
			if strings.EqualFold(args[i], "COUNT") {
				return small(args[i+1])
			}
		}
		return false // a scan without COUNT counts 10: bounded, but the tool always says
	case "LRANGE", "ZRANGE":
		start, err1 := strconv.Atoi(args[2])
		stop, err2 := strconv.Atoi(args[3])
		return err1 == nil && err2 == nil && start >= 0 && stop >= start && small(strconv.Itoa(stop-start))
	}
	return false
}
