package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sentinelTimeout bounds how long the replica and the sentinel may take to
// see each other and the master.
const sentinelTimeout = 10 * time.Second

// Sentinel is the smallest setup in which a failover can happen: one master,
// one replica and one sentinel (quorum 1) that declares the master down after
// one second, so failover tests finish in a few seconds.
type Sentinel struct {
	// Master and Replica are the initial roles; after a failover the
	// replica is the master.
	Master, Replica *Server
	// Sentinel is the sentinel process; its Addr is what a sentinel client
	// is given.
	Sentinel *Server
	// MasterName is the name the sentinel monitors the master under.
	MasterName string
}

// NewSentinel starts the master (with masterArgs after the defaults), its
// replica and the sentinel, and returns once the replica is in sync and the
// sentinel knows both, so that a failover can start at once. The caller must
// Close it.
func NewSentinel(masterArgs ...string) (*Sentinel, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	st := &Sentinel{MasterName: "mymaster"}
	var err error
	// The master's delay matters too: it is the master that waits before a
	// diskless sync (5s by default).
	st.Master, err = NewServer(Config{Args: append([]string{"--repl-diskless-sync-delay", "0"}, masterArgs...)})
	if err != nil {
		return nil, err
	}
	st.Replica, err = NewServer(Config{Args: []string{
		"--replicaof", "127.0.0.1", strconv.Itoa(st.Master.Port),
		"--repl-diskless-sync-delay", "0",
	}})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	err = poll(ctx, func() error {
		info, err := st.Replica.DoContext(ctx, "INFO", "replication")
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = errors.New("master_link_status is not up")
		}
		return err
	})
	if err != nil {
		_ = st.Close()
		return nil, st.Replica.errorf("replica not in sync within %v: %v", sentinelTimeout, err)
	}
	st.Sentinel, err = start(spec{argsFor: sentinelArgs(st.MasterName, st.Master.Port)})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := poll(ctx, func() error { return st.ready(ctx) }); err != nil {
		_ = st.Close()
		return nil, st.Sentinel.errorf("sentinel not ready within %v: %v", sentinelTimeout, err)
	}
	return st, nil
}

// sentinelArgs writes the sentinel's own config file, which the sentinel
// rewrites as it learns; redis-server --sentinel is the same program as
// redis-sentinel, so no second binary is needed.
func sentinelArgs(name string, masterPort int) func(int, string) ([]string, error) {
	return func(port int, dir string) ([]string, error) {
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf(`port %d
bind 127.0.0.1
daemonize no
dir %s
logfile %s
sentinel monitor %s 127.0.0.1 %d 1
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 3000
`, port, dir, filepath.Join(dir, "log"), name, masterPort, name, name)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		return []string{conf, "--sentinel"}, nil
	}
}

// ready checks that the sentinel reports the master and lists the replica as
// a healthy candidate; without the latter a failover would find no replica.
func (st *Sentinel) ready(ctx context.Context) error {
	addr, err := st.Sentinel.DoContext(ctx, "SENTINEL", "get-master-addr-by-name", st.MasterName)
	if err != nil {
		return err
	}
	if want := "127.0.0.1\n" + strconv.Itoa(st.Master.Port); addr != want {
		return fmt.Errorf("get-master-addr-by-name = %q, want %q", addr, want)
	}
	replicas, err := st.Sentinel.DoContext(ctx, "SENTINEL", "replicas", st.MasterName)
	if err != nil {
		return err
	}
	// The flattened reply is field/value pairs, replica after replica.
	kv := strings.Split(replicas, "\n")
	var port, flags string
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "name":
			port, flags = "", ""
		case "port":
			port = kv[i+1]
		case "flags":
			flags = kv[i+1]
		}
		if port == strconv.Itoa(st.Replica.Port) && flags == "slave" {
			return nil
		}
	}
	return fmt.Errorf("sentinel does not list replica %s as a healthy slave yet: %q", st.Replica.Addr, replicas)
}

// StartSentinel gives a test a ready master/replica/sentinel setup that is
// stopped when the test ends.
func StartSentinel(tb testing.TB, masterArgs ...string) *Sentinel {
	tb.Helper()
	Require(tb)
	st, err := NewSentinel(masterArgs...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// Close stops the sentinel first (so it starts no failover during teardown),
// then the replica, then the master (so the master has no replica to wait
// for on SIGTERM), and removes their directories.
func (st *Sentinel) Close() error {
	var errs []error
	for _, s := range []*Server{st.Sentinel, st.Replica, st.Master} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
