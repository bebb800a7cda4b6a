package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// gone reports whether no process has the pid any more (a zombie would
// still answer signal 0, so this also proves the process was reaped).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func mustDo(t *testing.T, s *Server, want string, args ...string) {
	t.Helper()
	got, err := s.Do(args...)
	if err != nil {
		t.Fatalf("%s %v: %v", s.Addr, args, err)
	}
	if got != want {
		t.Fatalf("%s %v = %q, want %q", s.Addr, args, got, want)
	}
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") || s.Addr != "127.0.0.1:"+strconv.Itoa(s.Port) {
		t.Fatalf("Addr %q, Port %d", s.Addr, s.Port)
	}
	mustDo(t, s, "PONG", "PING")
	mustDo(t, s, "OK", "SET", "k", "v")
	mustDo(t, s, "v", "GET", "k")
	mustDo(t, s, "", "GET", "missing")
	mustDo(t, s, "1", "EXISTS", "k")
	mustDo(t, s, "\n", "MGET", "k2", "k3") // nil elements render as ""
	if _, err := s.Do("SET", "k2", "a"); err != nil {
		t.Fatal(err)
	}
	mustDo(t, s, "a\n", "MGET", "k2", "k3")
	if _, err := s.Do("NOSUCHCOMMAND"); err == nil || !strings.HasPrefix(err.Error(), "ERR unknown command") {
		t.Fatalf("want a Redis error, got %v", err)
	}
	// DEBUG is enabled for tests that need a blocked server.
	mustDo(t, s, "OK", "DEBUG", "SLEEP", "0")
}

func TestCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	if pid == 0 || gone(pid) {
		t.Fatalf("pid %d not running", pid)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("pid %d still there after Close", pid)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s still there: %v", s.Dir, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if s.PID() != 0 {
		t.Fatal("PID after Close is not 0")
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
}

func TestCloseAfterKillAndWhilePaused(t *testing.T) {
	t.Parallel()
	a, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	b, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	pid := b.PID()
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("paused pid %d survived Close", pid)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closing a paused server took %v", d)
	}
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	pid := s.PID()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("pid %d still there after Kill", pid)
	}
	if s.PID() != 0 {
		t.Fatal("PID after Kill is not 0")
	}
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("killed server answered")
	}
	if err := s.Pause(); err == nil {
		t.Fatal("Pause of a killed server succeeded")
	}
	port := s.Port
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port != port || s.Addr != "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("port changed: %d -> %d", port, s.Port)
	}
	if s.PID() == 0 || s.PID() == pid {
		t.Fatalf("pid after restart %d (before %d)", s.PID(), pid)
	}
	mustDo(t, s, "PONG", "PING")
	// Restart of a running server kills and starts it again.
	pid = s.PID()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("old pid %d still there", pid)
	}
	mustDo(t, s, "PONG", "PING")
}

func TestRestartKeepsAppendOnlyData(t *testing.T) {
	t.Parallel()
	s := Start(t, "--appendonly", "yes", "--appendfsync", "always")
	mustDo(t, s, "OK", "SET", "k", "v")
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	mustDo(t, s, "v", "GET", "k")
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.DoContext(ctx, "PING"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("paused server: want a deadline error, got %v", err)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	mustDo(t, s, "PONG", "PING")
}

func TestStartN(t *testing.T) {
	t.Parallel()
	servers := StartN(t, 3)
	if len(servers) != 3 {
		t.Fatalf("got %d servers", len(servers))
	}
	seen := map[int]bool{}
	for _, s := range servers {
		if seen[s.Port] {
			t.Fatalf("port %d handed out twice", s.Port)
		}
		seen[s.Port] = true
		mustDo(t, s, "PONG", "PING")
	}
}

func TestBadArgsErrorHasLog(t *testing.T) {
	t.Parallel()
	_, err := NewServer(Config{Args: []string{"--no-such-directive", "yes"}})
	if err == nil {
		t.Fatal("server with a bad directive started")
	}
	if !strings.Contains(err.Error(), "no-such-directive") || !strings.Contains(err.Error(), "--- tail of") {
		t.Fatalf("error lacks the log tail: %v", err)
	}
}

func TestFixedPortTaken(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s2, err := NewServer(Config{Port: s.Port})
	if err == nil {
		s2.Close()
		t.Fatalf("second server on port %d started", s.Port)
	}
	if !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("second server on port %d: %v", s.Port, err)
	}
}

// clusterClient checks that a rueidis cluster client works right after
// StartCluster returned, with keys spread over every master.
func clusterClient(t *testing.T, c *Cluster) {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if client.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("Mode() = %v", client.Mode())
	}
	ctx := context.Background()
	for i := range 100 {
		k, v := fmt.Sprintf("key-%d", i), strconv.Itoa(i)
		if err := client.Do(ctx, client.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		got, err := client.Do(ctx, client.B().Get().Key(k).Build()).ToString()
		if err != nil || got != v {
			t.Fatalf("GET %s = %q, %v", k, got, err)
		}
	}
	for _, m := range c.Masters {
		n, err := m.Do("DBSIZE")
		if err != nil || n == "0" {
			t.Fatalf("master %s holds %q keys (%v): slots not spread", m.Addr, n, err)
		}
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 0)
	if len(c.Addrs) != 3 || len(c.Masters) != 3 || c.Replicas != nil || len(c.Servers()) != 3 {
		t.Fatalf("layout: %+v", c)
	}
	clusterClient(t, c)
}

func TestClusterWithReplicas(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 1)
	if len(c.Replicas) != 3 || len(c.Servers()) != 6 {
		t.Fatalf("layout: %+v", c)
	}
	for _, s := range c.Servers() {
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("%s: %q %v", s.Addr, info, err)
		}
	}
	for i, r := range c.Replicas {
		repl, err := r.Do("INFO", "replication")
		want := "master_port:" + strconv.Itoa(c.Masters[i].Port)
		if err != nil || !strings.Contains(repl, "role:slave") || !strings.Contains(repl, want) {
			t.Fatalf("replica %s: %q %v", r.Addr, repl, err)
		}
	}
	clusterClient(t, c)

	pids := map[string]int{}
	for _, s := range c.Servers() {
		pids[s.Addr] = s.PID()
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for addr, pid := range pids {
		if !gone(pid) {
			t.Errorf("%s pid %d still there after Close", addr, pid)
		}
	}
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	st := StartSentinel(t)
	if st.MasterName != "mymaster" {
		t.Fatalf("MasterName %q", st.MasterName)
	}
	mustDo(t, st.Sentinel, "127.0.0.1\n"+strconv.Itoa(st.Master.Port), "SENTINEL", "get-master-addr-by-name", "mymaster")
	repl, err := st.Replica.Do("INFO", "replication")
	if err != nil || !strings.Contains(repl, "master_link_status:up") {
		t.Fatalf("replica: %q %v", repl, err)
	}
	pids := []int{st.Master.PID(), st.Replica.PID(), st.Sentinel.PID()}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("pid %d still there after Close", pid)
		}
	}
}

// TestSentinelFailover proves the setup is good for what it is for: after the
// master dies, the sentinel promotes the replica within a few seconds.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	st := StartSentinel(t)
	if err := st.Master.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	want := "127.0.0.1\n" + strconv.Itoa(st.Replica.Port)
	for {
		got, err := st.Sentinel.Do("SENTINEL", "get-master-addr-by-name", st.MasterName)
		if err == nil && got == want {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("no failover after %v: %q %v", time.Since(start), got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("failover after %v", time.Since(start).Round(time.Millisecond))
	role, err := st.Replica.Do("ROLE")
	if err != nil || !strings.HasPrefix(role, "master") {
		t.Fatalf("replica after failover: ROLE = %q, %v", role, err)
	}
}
