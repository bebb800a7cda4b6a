// Package redistest runs real redis-server processes (standalone, cluster and
// sentinel) on free loopback ports, so that tests and benchmarks exercise the
// library against the same server it meets in production, including its
// failures: kill, restart, stall (SIGSTOP) and failover.
//
// Every process listens on 127.0.0.1 only, lives in its own temporary
// directory and its own process group, and is stopped by its own pid.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// serverBin is the one binary used for every role: redis-server also runs a
// sentinel with --sentinel, so a machine needs nothing else.
const serverBin = "redis-server"

var (
	portMu sync.Mutex
	// portsUsed holds every port handed out by this process (including the
	// cluster bus ports), never released, so that two servers starting at the
	// same time, or a server and a restarted one, cannot be given the same port.
	portsUsed = map[int]bool{}
)

// freePort finds a port on 127.0.0.1 that nothing listens on now. The kernel
// may still hand it to someone else before redis-server binds it; callers
// retry on "Address already in use". With bus set, port+10000 (the cluster
// bus) must be free too.
func freePort(bus bool) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 100 {
		p, err := listenFree(0)
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		if portsUsed[p] || portsUsed[p+10000] {
			continue
		}
		if bus {
			if p+10000 > 65535 {
				continue
			}
			if _, err := listenFree(p + 10000); err != nil {
				continue
			}
		}
		portsUsed[p] = true
		if bus {
			portsUsed[p+10000] = true
		}
		return p, nil
	}
	return 0, errors.New("redistest: no free port on 127.0.0.1 after 100 tries")
}

// listenFree binds 127.0.0.1:port (0 = any) and closes it at once, returning
// the port the kernel chose.
func listenFree(port int) (int, error) {
	l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return 0, err
	}
	p := l.Addr().(*net.TCPAddr).Port
	return p, l.Close()
}

var (
	lookOnce sync.Once
	lookErr  error
)

// available reports why redis-server cannot be run, once per process.
func available() error {
	lookOnce.Do(func() {
		if _, err := exec.LookPath(serverBin); err != nil {
			lookErr = fmt.Errorf("redistest: %s not found in PATH (install it, e.g. apt-get install redis-server): %w", serverBin, err)
		}
	})
	return lookErr
}

// Require lets a developer without redis-server run the rest of the tests
// (they are skipped), while CI, where a missing server means a broken setup
// rather than a choice, fails loudly instead of passing on skipped tests.
func Require(tb testing.TB) {
	tb.Helper()
	err := available()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("%v (CI is set, so this is an error, not a skip)", err)
	}
	tb.Skipf("skipping: %v", err)
}
