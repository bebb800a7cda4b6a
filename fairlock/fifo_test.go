package fairlock_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/testkit"
)

// TestGrantsFollowTheLine audits the server itself: 8 Clients contend for one fair lock with no
// pause between their turns, and every command Redis runs (MONITOR, scripts' calls included) is
// replayed on a model of the line. Every acquisition must go to the head of the line, taken off it
// in the same script, or be made when the line is empty; and no live waiter may be passed over.
func TestGrantsFollowTheLine(t *testing.T) {
	tg := testkit.Own(t)
	n := name(t)
	mon := monitor(t, tg.Addrs[0])

	const clients, turns = 8, 150
	var wg sync.WaitGroup
	for range clients {
		l := newLock(t, tg.Client(t), n)
		wg.Go(func() {
			for range turns {
				held, err := l.Lock(context.Background())
				if !assert(t, err) {
					return
				}
				assert(t, l.Unlock(held))
			}
		})
	}
	wg.Wait()
	lines := mon.stop(t)

	queue := "redisson_lock_queue:{" + n + "}"
	var line []string
	taken := "" // the head the current script took off the line, until it is granted
	grants := 0
	for i, cmd := range lines {
		if len(cmd) < 2 {
			continue
		}
		switch strings.ToLower(cmd[0]) {
		case "evalsha", "eval":
			require.Empty(t, taken, "command %d: %q left the line and was not granted the lock (passed over while alive)", i, taken)
		case "rpush":
			if cmd[1] == queue {
				line = append(line, cmd[2:]...)
			}
		case "lpop":
			if cmd[1] == queue {
				require.NotEmpty(t, line, "command %d: LPOP of an empty line", i)
				require.Empty(t, taken, "command %d: %q left the line and was not granted the lock (passed over while alive)", i, taken)
				taken, line = line[0], line[1:]
			}
		case "lrem":
			if cmd[1] == queue {
				for j, w := range line {
					if w == cmd[3] {
						line = append(line[:j], line[j+1:]...)
						break
					}
				}
			}
		case "hset":
			if cmd[1] == n {
				grants++
				require.True(t, cmd[2] == taken || taken == "" && len(line) == 0,
					"command %d: the lock went to %q while %v waited in line (head taken: %q)", i, cmd[2], line, taken)
				taken = ""
			}
		}
	}
	require.Empty(t, taken, "%q left the line last and was not granted the lock", taken)
	require.Equal(t, clients*turns, grants, "acquisitions seen by the audit")
}

// assert reports err as a test error from a goroutine of the test, and whether it was nil.
func assert(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
	}
	return err == nil
}

// monitored is a MONITOR connection and the commands it has seen.
type monitored struct {
	conn  net.Conn
	mu    sync.Mutex
	lines [][]string
	end   chan struct{} // closed when the marker of stop is seen
	done  chan struct{} // closed when the connection ends
}

// monitor starts recording every command the server at addr runs.
func monitor(t *testing.T, addr string) *monitored {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	m := &monitored{conn: conn, end: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { conn.Close() })
	r := bufio.NewReaderSize(conn, 1<<20)
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	ok, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", ok)
	go func() {
		defer close(m.done)
		for {
			s, err := r.ReadString('\n')
			if err != nil {
				return
			}
			args, err := monitorArgs(s)
			if err != nil {
				continue
			}
			if len(args) == 2 && args[1] == marker {
				close(m.end)
				return
			}
			m.mu.Lock()
			m.lines = append(m.lines, args)
			m.mu.Unlock()
		}
	}()
	return m
}

const marker = "monitor-end"

// stop waits until the server has reported a marker command sent after everything before, and
// returns what it saw before it.
func (m *monitored) stop(t *testing.T) [][]string {
	t.Helper()
	c, err := net.Dial("tcp", m.conn.RemoteAddr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "ECHO %s\r\n", marker)
	require.NoError(t, err)
	_, err = bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	<-m.done // the reader stops at the marker, or when the connection ends
	select {
	case <-m.end:
	default:
		t.Fatal("the MONITOR connection ended before the marker")
	}
	m.conn.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lines
}

// monitorArgs reads the command of a MONITOR line: `+<time> [<db> <client>] "arg" "arg" ...`, each
// argument quoted with backslash escapes.
func monitorArgs(s string) ([]string, error) {
	i := strings.IndexByte(s, ']')
	if !strings.HasPrefix(s, "+") || i < 0 {
		return nil, fmt.Errorf("not a MONITOR line: %q", s)
	}
	rest := strings.TrimSpace(s[i+1:])
	var args []string
	for rest != "" {
		if rest[0] != '"' {
			return nil, fmt.Errorf("unquoted argument in %q", s)
		}
		j := 1
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' {
				j++
			}
		}
		if j >= len(rest) {
			return nil, fmt.Errorf("unterminated argument in %q", s)
		}
		a, err := strconv.Unquote(rest[:j+1])
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		rest = strings.TrimSpace(rest[j+1:])
	}
	return args, nil
}
