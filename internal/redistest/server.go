package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer PING after it is
// started, so a broken setup fails in seconds rather than at the test timeout.
const startTimeout = 10 * time.Second

// stopGrace is how long Close lets a server shut down on SIGTERM before it
// is killed: a master waits for lagging replicas on SIGTERM, and a test must
// not wait for that.
const stopGrace = 3 * time.Second

// Config describes one server. The zero value is a plain standalone server
// that keeps nothing on disk, which is what most tests want.
type Config struct {
	// Args are appended to the defaults, so a later setting overrides a
	// default one (e.g. "--appendonly", "yes").
	Args []string
	// Port fixes the port; 0 picks a free one (and retries if it is taken
	// while the server starts).
	Port int
}

// Server is one redis-server (or sentinel) process that a test owns: it can
// be killed, restarted on the same port and directory, paused and resumed,
// to reproduce crashes and stalls.
type Server struct {
	// Addr is "127.0.0.1:PORT", ready for a client's InitAddress.
	Addr string
	// Port stays the same across Restart, so clients reconnect to it.
	Port int
	// Dir holds the server's data and its logfile "log"; it is removed by
	// Close, and kept across Kill and Restart so persistence can be tested.
	Dir string

	bin  string   // executable
	args []string // full argument list, reused by Restart

	mu      sync.Mutex
	cmd     *exec.Cmd     // nil when not running
	done    chan struct{} // closed when cmd has been waited for
	waitErr error         // cmd.Wait's result, valid after done
	closed  bool
}

// spec says how to start one server: argsFor builds the argument list for a
// port and directory, so that a retry on another port gets fresh arguments
// (and a sentinel gets a fresh config file).
type spec struct {
	port    int  // fixed port, 0 = free one
	bus     bool // also needs port+10000 (cluster bus)
	argsFor func(port int, dir string) ([]string, error)
}

// errPortInUse marks a start that failed only because another process took
// the port between freePort and redis-server's bind.
var errPortInUse = errors.New("port already in use")

// NewServer starts a standalone server and waits until it answers PING. It
// is for users without a testing.TB (benchmarks, tools); the caller must
// Close it.
func NewServer(cfg Config) (*Server, error) {
	return start(spec{port: cfg.Port, argsFor: standaloneArgs(cfg.Args)})
}

// standaloneArgs gives a server that keeps nothing on disk unless the test
// asks for it, and allows DEBUG SLEEP from loopback to simulate a blocked
// server.
func standaloneArgs(extra []string) func(int, string) ([]string, error) {
	return func(port int, dir string) ([]string, error) {
		args := []string{
			"--bind", "127.0.0.1",
			"--port", strconv.Itoa(port),
			"--save", "",
			"--appendonly", "no",
			"--dir", dir,
			"--logfile", filepath.Join(dir, "log"),
			"--daemonize", "no",
			"--enable-debug-command", "local",
		}
		return append(args, extra...), nil
	}
}

// start launches a server described by sp, retrying on another port when
// the chosen one was taken in the meantime.
func start(sp spec) (*Server, error) {
	if err := available(); err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port := sp.port
		if port == 0 {
			var err error
			if port, err = freePort(sp.bus); err != nil {
				return nil, err
			}
		}
		dir, err := os.MkdirTemp("", fmt.Sprintf("redistest-%d-", port))
		if err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		s := &Server{
			Addr: fmt.Sprintf("127.0.0.1:%d", port),
			Port: port,
			Dir:  dir,
			bin:  serverBin,
		}
		if s.args, err = sp.argsFor(port, dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: %w", err)
		}
		s.mu.Lock()
		err = s.launchLocked()
		s.mu.Unlock()
		if err == nil {
			return s, nil
		}
		lastErr = err
		_ = s.Close()
		if sp.port != 0 || !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, lastErr
}

// launchLocked starts the process and waits for PING; on failure the process
// is killed and the error carries the log's tail.
func (s *Server) launchLocked() error {
	out, err := os.OpenFile(filepath.Join(s.Dir, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout = out // an *os.File: no copying goroutine that could outlive the process
	cmd.Stderr = out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() {
		err := cmd.Wait()
		out.Close()
		s.waitErr = err // read only after <-done
		close(done)
	}()
	if err := s.waitReady(done); err != nil {
		_ = s.killLocked()
		return err
	}
	return nil
}

// waitReady polls PING until PONG, the process exits or startTimeout passes.
func (s *Server) waitReady(done chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for {
		select {
		case <-done:
			err := s.errorf("exited while starting (%v)", s.waitErr)
			if strings.Contains(err.Error(), "Address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		default:
		}
		err := s.answers()
		if err == nil {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return s.errorf("no PONG within %v (last: %v)", startTimeout, last)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// answers checks that the server on our port is our process (not another
// one that already held the port) and that it serves commands (PING fails
// while a data set is still loading).
func (s *Server) answers() error {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	info, err := do(ctx, s.Addr, "INFO", "server")
	if err != nil {
		return err
	}
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid) + "\r\n"
	if !strings.Contains(info, want) {
		return errors.New("another process answers on this port")
	}
	reply, err := do(ctx, s.Addr, "PING")
	if err == nil && reply != "PONG" {
		err = fmt.Errorf("PING answered %q", reply)
	}
	return err
}

// errorf builds an error that names the server and ends with the tail of its
// log, because a failure of a server is almost always explained there.
func (s *Server) errorf(format string, args ...any) error {
	return fmt.Errorf("redistest: %s (%s): %s%s", s.Addr, s.Dir, fmt.Sprintf(format, args...), s.logTail())
}

// logTail returns the last lines of the server's output and log file.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{"stdout", "log"} {
		data, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(&b, "\n--- tail of %s ---\n%s", filepath.Join(s.Dir, name), strings.Join(lines, "\n"))
	}
	return b.String()
}

// runningLocked reports whether the process is started and not yet reaped;
// only then is its pid (and process group) still ours to signal.
func (s *Server) runningLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// PID lets a test signal or watch the process itself; it is 0 while the
// server is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return 0
	}
	return s.cmd.Process.Pid
}

// Close stops the server for good and removes its directory, so that tests
// leave neither processes nor files behind. It asks politely (SIGTERM, also
// waking a paused server) and kills after a grace period. It may be called
// more than once, and after Kill.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.runningLocked() {
		pid := s.cmd.Process.Pid
		_ = syscall.Kill(pid, syscall.SIGTERM)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		select {
		case <-s.done:
		case <-time.After(stopGrace):
			_ = s.killLocked()
		}
	}
	s.cmd = nil
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return nil
}

// Kill simulates a crash: SIGKILL, no shutdown work, nothing saved that the
// configuration does not save on every write. The directory stays, so that
// Restart can bring the server back with whatever it persisted.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killLocked()
}

func (s *Server) killLocked() error {
	if s.runningLocked() {
		pid := s.cmd.Process.Pid
		// The whole group, so that a fork child (RDB save, diskless sync)
		// dies with it; the group id is the server's own pid.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if s.cmd != nil {
		<-s.done
		s.cmd = nil
	}
	return nil
}

// Restart brings the server back on the same port and directory with the
// same arguments, as after a crash and reboot; a running server is killed
// first. Clients that reconnect by address find it again.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("redistest: %s: Restart after Close", s.Addr)
	}
	_ = s.killLocked()
	var err error
	for range 3 {
		if err = s.launchLocked(); err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Pause simulates a stalled server (a long GC-like pause, a frozen VM):
// connections stay open but nothing is answered until Resume.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume ends a Pause; the server answers what was queued meanwhile.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return fmt.Errorf("redistest: %s: not running", s.Addr)
	}
	if err := syscall.Kill(s.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("redistest: %s: %v: %w", s.Addr, sig, err)
	}
	return nil
}

// Start gives a test a standalone server that is stopped when the test ends;
// extra arguments go to redis-server after the defaults. It skips (or, on
// CI, fails) when redis-server is missing.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	Require(tb)
	s, err := NewServer(Config{Args: args})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// StartN gives a test n independent servers, started concurrently because
// each start costs tens of milliseconds (e.g. for Redlock-style tests).
func StartN(tb testing.TB, n int, args ...string) []*Server {
	tb.Helper()
	Require(tb)
	servers, err := startMany(n, func(int) spec {
		return spec{argsFor: standaloneArgs(args)}
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { closeAll(servers) })
	return servers
}

// startMany starts n servers concurrently; if any fails, the others are
// closed and the first error is returned.
func startMany(n int, specFor func(i int) spec) ([]*Server, error) {
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = start(specFor(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(servers)
		return nil, err
	}
	return servers, nil
}

// closeAll closes servers concurrently, so a teardown costs one grace period
// at most, not one per server. nil entries are skipped.
func closeAll(servers []*Server) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		if s != nil {
			wg.Go(func() { errs[i] = s.Close() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
