package reliability

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

var soakTrace = flag.String("soak-trace", "", "TestSoak writes the server's MONITOR feed and the holders' events of the seconds before its first violation to this file")

// traceSpan is how much of the feed before a violation the file gets: a stop longer than the TTL
// and what led to it.
const traceSpan = 6 * time.Second

// trace keeps the server's MONITOR feed and the soak's own events, interleaved as they arrive, and
// writes the last traceSpan of them to a file when the first violation is seen: what it takes to
// explain an overlap after the fact. A nil trace records nothing.
type trace struct {
	t     *testing.T
	path  string
	named bool // several servers: each line of the feed names the one it came from

	mu      sync.Mutex
	conns   map[string]net.Conn // the MONITOR connection of each server, by address
	lines   []traceLine
	written bool // a violation was seen: the file is being written
	done    bool // the file is written: record nothing more
	wg      sync.WaitGroup
}

type traceLine struct {
	at   time.Time
	text string
}

// startTrace starts a trace of the servers at addrs, or returns nil when path is empty. With several
// servers (a cluster), each line of the feed names the server it came from.
func startTrace(t *testing.T, path string, addrs ...string) *trace {
	if path == "" {
		return nil
	}
	tr := &trace{t: t, path: path, named: len(addrs) > 1, conns: make(map[string]net.Conn)}
	t.Cleanup(func() {
		tr.mu.Lock()
		for _, conn := range tr.conns {
			conn.Close()
		}
		tr.mu.Unlock()
		tr.wg.Wait()
	})
	for _, addr := range addrs {
		if err := tr.monitor(addr); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// monitor follows the MONITOR feed of the server at addr on a connection of its own.
func (tr *trace) monitor(addr string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(conn, "MONITOR\r\n"); err != nil {
		conn.Close()
		return err
	}
	from := "redis "
	if tr.named {
		from = "redis " + addr + " "
	}
	tr.mu.Lock()
	if old := tr.conns[addr]; old != nil {
		old.Close()
	}
	tr.conns[addr] = conn
	tr.mu.Unlock()
	tr.wg.Go(func() {
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			tr.add(from + strings.TrimSpace(line))
		}
	})
	return nil
}

// restarted follows the feed of the server restarted at addr.
func (tr *trace) restarted(addr string) {
	if tr != nil {
		testkit.Eventually(tr.t, 20*time.Second, func() error { return tr.monitor(addr) })
	}
}

// logf records one of the soak's events.
func (tr *trace) logf(format string, args ...any) {
	if tr != nil {
		tr.add(fmt.Sprintf(format, args...))
	}
}

func (tr *trace) add(text string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.done {
		return
	}
	tr.lines = append(tr.lines, traceLine{time.Now(), text})
	// Keep a bounded tail until the file is written; memory grows with the feed otherwise.
	if n := len(tr.lines); n > 1<<20 && !tr.written {
		cut := tr.lines[n-1].at.Add(-2 * traceSpan)
		i := 0
		for i < n && tr.lines[i].at.Before(cut) {
			i++
		}
		tr.lines = append([]traceLine(nil), tr.lines[i:]...)
	}
}

// violation writes the file once, a moment after the first violation so that the feed has caught up.
func (tr *trace) violation(what string) {
	if tr == nil {
		return
	}
	tr.add("VIOLATION " + what)
	tr.mu.Lock()
	first := !tr.written
	tr.written = true
	tr.mu.Unlock()
	if !first {
		return
	}
	at := time.Now()
	tr.wg.Go(func() {
		time.Sleep(300 * time.Millisecond)
		tr.mu.Lock()
		var b strings.Builder
		for _, l := range tr.lines {
			if l.at.After(at.Add(-traceSpan)) {
				fmt.Fprintf(&b, "%s %s\n", l.at.Format("15:04:05.000000"), l.text)
			}
		}
		tr.lines, tr.done = nil, true
		tr.mu.Unlock()
		if err := os.WriteFile(tr.path, []byte(b.String()), 0o644); err != nil {
			tr.t.Errorf("soak trace: %v", err)
			return
		}
		tr.t.Logf("soak trace of the first violation written to %s", tr.path)
	})
}

// The trace file holds the server's commands and the soak's events before the violation.
func TestTraceWritesWhatLedToAViolation(t *testing.T) {
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	path := filepath.Join(t.TempDir(), "trace.txt")
	tr := startTrace(t, path, srv.Addr)
	testkit.Eventually(t, 5*time.Second, func() error { // MONITOR is on once it sees commands
		if _, err := srv.Do("SET", "traced", "1"); err != nil {
			return err
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, l := range tr.lines {
			if strings.Contains(l.text, `"traced"`) {
				return nil
			}
		}
		return fmt.Errorf("no SET in the feed yet")
	})
	tr.logf("lock: acquired")
	tr.violation("two holders")
	var out []byte
	testkit.Eventually(t, 5*time.Second, func() (err error) {
		// The file exists as soon as it is created; its last line, the violation, comes last.
		if out, err = os.ReadFile(path); err == nil && !strings.Contains(string(out), "VIOLATION") {
			err = fmt.Errorf("the trace is still being written")
		}
		return err
	})
	for _, want := range []string{`"SET" "traced" "1"`, "lock: acquired", "VIOLATION two holders"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
}
