package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A delayProxy forwards TCP connections to a server and holds every byte for a fixed time in each
// direction, in order: what a network between hosts adds to a round trip (twice oneWay), on one
// machine. The kernel here has no netem qdisc (tc reports the kind unknown), so the delay is made in
// user space, and its own cost is measured (proxyRoundTrip) and printed beside the figures. The bench
// runs each proxy in a process of its own (proxyProcess), so that its goroutines, allocations and
// garbage collection stay out of the measured process's figures.
//
// Go's timers round a wait under a millisecond up to about one in a process with nothing else to run,
// which would turn 100 us into 1.1 ms; so each direction of a connection waits on a timerfd of its
// own, which the runtime's netpoller watches: the wait ends at the kernel's timer precision (about
// 15 us late here), and holds no thread.
type delayProxy struct {
	ln     net.Listener
	target string
	oneWay time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newDelayProxy listens on a free loopback port and forwards to target.
func newDelayProxy(target string, oneWay time.Duration) (*delayProxy, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &delayProxy{ln: ln, target: target, oneWay: oneWay, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is where clients connect instead of the server.
func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for its goroutines.
func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// track records c for Close; it reports false, and closes c, once the proxy is closed.
func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *delayProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *delayProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			// A server that cannot be reached closes the client's connection, as a refused dial
			// would have; one that is stopped (SIGSTOP) still accepts, as it does without the proxy.
			server, err := net.Dial("tcp4", p.target)
			if err != nil || !p.track(server) {
				p.untrack(client)
				return
			}
			for _, c := range []net.Conn{client, server} {
				c.(*net.TCPConn).SetNoDelay(true)
			}
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); p.pipe(client, server) }()
			go func() { defer both.Done(); p.pipe(server, client) }()
			both.Wait()
		}()
	}
}

// chunk is what one read returned, and when it may be written on (CLOCK_MONOTONIC, ns).
type chunk struct {
	b   []byte
	due int64
}

// pipe copies src to dst, each read held until oneWay after it returned, on a goroutine of its own
// so that reads go on meanwhile. Either side ending or failing closes both.
func (p *delayProxy) pipe(src, dst net.Conn) {
	defer p.untrack(src, dst)
	// At 0 delay every chunk is due when read and goes the same way without a wait: what the proxy
	// costs by itself (proxyOverhead).
	line := make(chan chunk, 1024) // full, it stops the reads: the sender sees the window close
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		defer dst.Close() // and src, so that the reader below ends
		defer src.Close()
		t, err := newHRTimer()
		if err != nil {
			return
		}
		defer t.close()
		var out []byte
		for c := range line {
			if c.due > monotonic() {
				if err := t.until(c.due); err != nil {
					return
				}
			}
			// Everything else that is due by now goes in the same write.
			out = append(out[:0], c.b...)
			putBuf(c.b)
			for more := true; more; {
				select {
				case n, ok := <-line:
					if !ok {
						more = false
						break
					}
					if n.due > monotonic() {
						if _, err := dst.Write(out); err != nil {
							return
						}
						if err := t.until(n.due); err != nil {
							return
						}
						out = out[:0]
					}
					out = append(out, n.b...)
					putBuf(n.b)
				default:
					more = false
				}
			}
			if _, err := dst.Write(out); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case line <- chunk{b: append(getBuf(), buf[:n]...), due: monotonic() + p.oneWay.Nanoseconds()}:
			case <-wrote: // the writer failed
				return
			}
		}
		if err != nil {
			break
		}
	}
	close(line)
	<-wrote
}

var bufs = sync.Pool{New: func() any { return make([]byte, 0, 512) }}

func getBuf() []byte  { return bufs.Get().([]byte)[:0] }
func putBuf(b []byte) { bufs.Put(b[:0]) }

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// hrTimer waits until a point of CLOCK_MONOTONIC on a timerfd, parked on the runtime's netpoller.
type hrTimer struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newHRTimer() (*hrTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &hrTimer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// until returns once CLOCK_MONOTONIC reads at least ns.
func (t *hrTimer) until(ns int64) error {
	if ns <= 0 {
		return errors.New("delay: no deadline")
	}
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(ns)}
	if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
		return err
	}
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *hrTimer) close() { t.f.Close() }

// proxyMain is the delay proxy's own process (see proxyProcess): it forwards to target with oneWay
// each way, prints its address, and ends when its standard input closes (its parent has gone).
func proxyMain(target, oneWay string) int {
	d, err := time.ParseDuration(oneWay)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	runtime.GOMAXPROCS(1) // one core at most; hand-offs between its goroutines wake no other thread
	p, err := newDelayProxy(target, d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p.Addr())
	io.Copy(io.Discard, os.Stdin)
	p.Close()
	return 0
}

// proxyProcess is a delay proxy in a process of its own: this program started again as
// "bench delay-proxy <target> <one way>".
type proxyProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

func startDelayProxy(target string, oneWay time.Duration) (*proxyProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "delay-proxy", target, oneWay.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proxyProcess{cmd: cmd, stdin: stdin}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addr <- strings.TrimSpace(line)
	}()
	select {
	case p.addr = <-addr:
	case <-time.After(10 * time.Second):
	}
	if p.addr == "" {
		p.Close()
		return nil, fmt.Errorf("the delay proxy for %s did not start", target)
	}
	return p, nil
}

func (p *proxyProcess) Addr() string { return p.addr }

// Close ends the process: its standard input closes, and it is killed if it lingers.
func (p *proxyProcess) Close() {
	p.stdin.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}
