package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/testkit"
)

var demoLine = regexp.MustCompile(`(?m)^(without a lock|with rlock)\s+sold\s+(\d+)\s+oversold\s+(\d+)\s+turned away\s+(\d+)`)

// demoResults parses the demo's summary: sold, oversold and turned away, without and with the lock.
func demoResults(t *testing.T, out string) (free, locked [3]int) {
	t.Helper()
	m := demoLine.FindAllStringSubmatch(out, -1)
	if len(m) != 2 {
		t.Fatalf("no summary in the demo's output:\n%s", out)
	}
	for i, row := range m {
		for j := range 3 {
			n, _ := strconv.Atoi(row[j+2])
			if i == 0 {
				free[j] = n
			} else {
				locked[j] = n
			}
		}
	}
	return free, locked
}

// TestDemoEmbedded: what 'go run ./cmd/redisync demo' shows on a machine with nothing installed.
func TestDemoEmbedded(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"demo"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	free, locked := demoResults(t, stdout.String())
	if free[1] == 0 || free[0] != 10+free[1] {
		t.Errorf("without a lock: sold %d, oversold %d; want an oversell", free[0], free[1])
	}
	if locked != [3]int{10, 0, 90} {
		t.Errorf("with rlock: sold, oversold, turned away = %v, want [10 0 90]", locked)
	}
	if !strings.Contains(stdout.String(), "acquisitions/s") || !strings.Contains(stdout.String(), "embedded Redis") {
		t.Errorf("output:\n%s", stdout.String())
	}
}

// TestDemoServer: the demo against a real server, with other numbers, leaves its keys behind.
func TestDemoServer(t *testing.T) {
	tg := testkit.Own(t)
	p := tool(t, "", "demo", "--addr", tg.Addrs[0], "--buyers", "60", "--stock", "7", "--clients", "3")
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	free, locked := demoResults(t, p.stdout.String())
	if free[1] == 0 {
		t.Errorf("without a lock: no oversell\n%s", p.stdout.String())
	}
	if locked != [3]int{7, 0, 53} {
		t.Errorf("with rlock: %v, want [7 0 53]", locked)
	}
	rdb := tg.Redis(t)
	// Only records that expire by themselves remain: unlock latches, and the waiters' records.
	for _, k := range strings.Fields(testkit.DoString(t, rdb, "KEYS", "*")) {
		if !strings.HasPrefix(k, "redisson_unlock_latch:") && !strings.HasPrefix(k, "redisync_lock_waiters:") &&
			!strings.HasPrefix(k, "redisync_lock_clients:") {
			t.Errorf("the demo left %q behind", k)
		}
	}
	tg.RequireNoSubscriptions(t)
}
