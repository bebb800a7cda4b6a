package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Cut says what a Fault does to the command it matches.
type Cut int

const (
	// LoseReply forwards the command, reads the server's whole reply, and
	// closes both sides without forwarding it: the server applied the
	// command, the client never hears of it. A NOSCRIPT reply (an EVALSHA the
	// server could not run) does not count: it is forwarded and the fault
	// stays armed for the EVAL that follows.
	LoseReply Cut = iota + 1
	// LoseRequest closes both sides instead of forwarding the command, once
	// the replies to the commands before it have been forwarded: the server
	// never sees it.
	LoseRequest
	// Delay is LoseRequest, except that the command is kept instead of
	// dropped: Fault.Deliver sends it to the server later, on a connection of
	// its own, as a request that the network held up arrives after the client
	// gave up on it and went on.
	Delay
	// HoldReply forwards the command and holds back the server's reply until
	// Fault.Release, or Fault.Lose: the server has applied the command, and
	// the client is still waiting for its answer. The connection stays up.
	HoldReply
)

func (c Cut) String() string {
	switch c {
	case LoseReply:
		return "reply lost"
	case LoseRequest:
		return "request lost"
	case Delay:
		return "request delayed"
	case HoldReply:
		return "reply held"
	}
	return "Cut(" + strconv.Itoa(int(c)) + ")"
}

// Rule says which command a Fault cuts. Commands after the cut one on the
// same connection are never forwarded: with the connection gone, their
// requests are lost too.
type Rule struct {
	Cut Cut
	// Commands are the command names that match, upper case; nil means the
	// script calls: EVALSHA, EVAL, EVALSHA_RO, EVAL_RO, FCALL, FCALL_RO.
	Commands []string
	// Key, when set, must be one of the command's keys: for a script or a
	// function the numkeys keys, for any other command any argument.
	Key string
	// Match, when set, must accept the command as well (name first, as sent).
	Match func(args []string) bool
	// Channel, when set, makes the rule match a Pub/Sub message instead of a
	// command: one the server pushes on a channel whose name contains
	// Channel. The connection is closed instead of forwarding it, so that the
	// subscriber misses it and must subscribe again. Cut, Commands, Key and
	// Match are then unused.
	Channel string
	// Nth cuts the Nth match counted from arming; 0 means the first. An
	// EVALSHA answered NOSCRIPT is no match (the EVAL after it may be).
	Nth int
}

var scriptCommands = []string{"EVALSHA", "EVAL", "EVALSHA_RO", "EVAL_RO", "FCALL", "FCALL_RO"}

func (r *Rule) matches(args []string) bool {
	if r.Channel != "" || len(args) == 0 {
		return false
	}
	name := strings.ToUpper(args[0])
	cmds := r.Commands
	if cmds == nil {
		cmds = scriptCommands
	}
	if !slices.Contains(cmds, name) {
		return false
	}
	if r.Key != "" {
		keys := args[1:]
		if slices.Contains(scriptCommands, name) {
			keys = nil
			if len(args) >= 3 {
				if n, err := strconv.Atoi(args[2]); err == nil && n >= 0 && 3+n <= len(args) {
					keys = args[3 : 3+n]
				}
			}
		}
		if !slices.Contains(keys, r.Key) {
			return false
		}
	}
	return r.Match == nil || r.Match(args)
}

// Fault is an armed Rule. It cuts one connection at one command (or
// message), once; then the proxies it was armed on are transparent again.
type Fault struct {
	rule  Rule
	fired chan struct{}

	mu       sync.Mutex
	seen     int
	claimed  bool // a connection is cutting at it, or it has been disarmed
	disarmed bool
	cmd      []string
	fireOnce sync.Once
	held     []byte // Delay: the command as the client sent it
	upstream string // Delay: where to deliver it
	release  chan struct{}
	relOnce  sync.Once
	lose     chan struct{}
	loseOnce sync.Once
}

// Release lets a HoldReply fault's reply go on to the client.
func (f *Fault) Release() { f.relOnce.Do(func() { close(f.release) }) }

// Lose ends a HoldReply fault as LoseReply would have, later: the reply it
// holds is dropped and its connection closed, so that something can happen
// in the server between the command and the client's learning that its
// answer is lost.
func (f *Fault) Lose() { f.loseOnce.Do(func() { close(f.lose) }) }

// Fired is closed once the fault has cut its connection (both sides are
// closed by then), or for HoldReply once it holds the reply.
func (f *Fault) Fired() <-chan struct{} { return f.fired }

// HasFired reports whether the fault has cut its connection. The client can see the cut, and
// send again, before HasFired says so: a test that follows a cut with Wait does not race it.
func (f *Fault) HasFired() bool {
	select {
	case <-f.fired:
		return true
	default:
		return false
	}
}

// Wait waits until the fault fired, at most d, and reports whether it did.
func (f *Fault) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.fired:
		return true
	case <-t.C:
		return false
	}
}

// Seen returns how many commands (or messages) matched the rule so far, the
// cut one included.
func (f *Fault) Seen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

// Command returns what was cut: the command's arguments, or for a message
// its kind, channel and payload; nil before the fault fired.
func (f *Fault) Command() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cmd
}

// Deliver sends the command a Delay fault kept to the server, on a new
// connection, and returns the server's reply as raw RESP. It fails when the
// fault has not fired, is not a Delay, or was delivered already.
func (f *Fault) Deliver() (string, error) {
	f.mu.Lock()
	raw, upstream := f.held, f.upstream
	f.held = nil
	f.mu.Unlock()
	if !f.HasFired() || raw == nil {
		return "", fmt.Errorf("redistest: no delayed command to deliver")
	}
	conn, err := net.DialTimeout("tcp4", upstream, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("redistest: deliver: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		return "", fmt.Errorf("redistest: deliver: %w", err)
	}
	in := &respReader{r: bufio.NewReader(conn)}
	_, reply, _, err := in.frame()
	if err != nil {
		return "", fmt.Errorf("redistest: deliver: %w", err)
	}
	return string(reply), nil
}

// Disarm stops the fault if it has not fired yet, and reports whether it
// had not: false means it fired (or is firing) first.
func (f *Fault) Disarm() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed {
		return false
	}
	f.claimed, f.disarmed = true, true
	return true
}

type offered int

const (
	offerNone    offered = iota
	offerCounted         // a match before the Nth
	offerClaimed         // the Nth: the caller cuts it (or gives it back with unclaim)
)

// offer counts a match and reports whether it is the one to cut.
func (f *Fault) offer(args []string, match func(*Rule, []string) bool) offered {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed || !match(&f.rule, args) {
		return offerNone
	}
	f.seen++
	if f.seen < max(f.rule.Nth, 1) {
		return offerCounted
	}
	f.claimed = true
	return offerClaimed
}

// uncount takes back a match that turned out not to be one: an EVALSHA that
// the server answered NOSCRIPT, which the client sends again as EVAL.
func (f *Fault) uncount() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen--
}

// unclaim gives back the cut of a command answered NOSCRIPT.
func (f *Fault) unclaim() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen--
	f.claimed = false
}

// fire records the cut, once, and counts it in cuts before Fired says so.
func (f *Fault) fire(args []string, cuts *atomic.Int64) {
	f.fireOnce.Do(func() {
		f.mu.Lock()
		f.cmd = args
		f.mu.Unlock()
		cuts.Add(1)
		close(f.fired)
	})
}

// spent reports whether the fault fired or was disarmed: no proxy needs it
// any more.
func (f *Fault) spent() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.disarmed || f.HasFired()
}

// Proxy is a TCP proxy in front of one server that understands RESP (2 and
// 3) well enough to cut a connection at a chosen command: to lose its
// request or its reply, as a network does, while every other command and
// reply passes through in order. Each client connection gets its own
// connection to the server.
//
// Replies are matched to commands as the server answers them, in order, so
// that pipelined commands stay aligned; RESP3 pushes are not replies, except
// the subscribe family's confirmations, which are matched to their commands:
// a connection that carries both commands and Pub/Sub (rueidis's SSUBSCRIBE
// in a cluster) can still be cut at a command. A RESP2 connection in
// subscribe mode passes through untouched, and so does a replica's
// replication stream (after PSYNC or SYNC).
type Proxy struct {
	ln   net.Listener
	cuts atomic.Int64

	mu       sync.Mutex
	upstream string
	conns    map[*proxyConn]struct{}
	faults   []*Fault
	closed   bool
	wg       sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards every connection to
// upstream. The caller must Close it.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redistest: proxy: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[*proxyConn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// StartProxy gives a test a proxy to upstream that is closed when the test
// ends.
func StartProxy(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	p, err := NewProxy(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// Addr is the address clients connect to instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is Addr's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Arm makes the proxy cut the connection of the next command (or message)
// that r matches; see Arm for a fault over several proxies.
func (p *Proxy) Arm(r Rule) *Fault { return Arm(r, p) }

// Arm arms one fault on several proxies (e.g. every node of a cluster): the
// first of them to see the rule's Nth match cuts it, and the others then
// let everything pass.
func Arm(r Rule, proxies ...*Proxy) *Fault {
	if r.Channel == "" && r.Cut != LoseReply && r.Cut != LoseRequest && r.Cut != Delay && r.Cut != HoldReply {
		panic(fmt.Sprintf("redistest: Arm: no Cut in %+v", r))
	}
	f := &Fault{rule: r, fired: make(chan struct{}), release: make(chan struct{}), lose: make(chan struct{})}
	for _, p := range proxies {
		p.mu.Lock()
		p.faults = append(p.faults, f)
		p.mu.Unlock()
	}
	return f
}

// Cuts returns how many connections the proxy's faults have cut so far.
func (p *Proxy) Cuts() int64 { return p.cuts.Load() }

// Drop closes every connection now, as a network that fails under all of
// them at once; clients that dial again get through.
func (p *Proxy) Drop() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Close stops accepting, closes every connection and waits until all of the
// proxy's goroutines have ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Drop()
	p.wg.Wait()
	return err
}

func (p *Proxy) setUpstream(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upstream = addr
}

// match finds the armed fault that claims this command or message, if any,
// and the faults that counted it as a match without claiming it; it forgets
// the faults that are spent.
func (p *Proxy) match(args []string, fn func(*Rule, []string) bool) (claimed *Fault, counted []*Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = slices.DeleteFunc(p.faults, (*Fault).spent)
	for _, f := range p.faults {
		switch f.offer(args, fn) {
		case offerClaimed:
			return f, counted
		case offerCounted:
			counted = append(counted, f)
		}
	}
	return nil, counted
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		closed, upstream := p.closed, p.upstream
		p.mu.Unlock()
		if closed {
			client.Close()
			return
		}
		server, err := net.DialTimeout("tcp4", upstream, 5*time.Second)
		if err != nil {
			client.Close() // as a server that is down: the client sees the connection end
			continue
		}
		c := &proxyConn{p: p, client: client, server: server, done: make(chan struct{}), resume: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.close()
			return
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(c.requests)
		p.wg.Go(c.replies)
	}
}

// proxyConn is one client connection and its server connection. Replies are
// matched to the commands they answer by counting: the server answers in
// order, once per command, except that in RESP3 the subscribe family is
// answered by push frames, one per channel.
type proxyConn struct {
	p              *Proxy
	client, server net.Conn
	done           chan struct{} // closed with the connections
	closeOnce      sync.Once
	resume         chan struct{} // a LoseReply command was answered NOSCRIPT: go on

	mu      sync.Mutex
	pending []owed // the replies the server owes, oldest first
	resp3   bool   // HELLO 3 was sent
	// subscribed: a RESP2 connection in subscribe mode, or one whose replies
	// can no longer be counted. It passes through untouched.
	subscribed bool
	drainCut   *Fault // LoseRequest: cut once the replies owed before it are forwarded
	drainArgs  []string
}

// owed is one reply the server owes.
type owed struct {
	pushes int    // RESP3 subscribe family: the confirmations still to come
	kind   string // their kind ("subscribe", "ssubscribe", ...)
	cut    *Fault // LoseReply: the connection is cut at this reply
	// counted are the faults that counted the command as a match without
	// cutting it: a NOSCRIPT reply takes the count back.
	counted []*Fault
	args    []string
	// stream: PSYNC or SYNC, after whose reply the server streams a snapshot
	// and the replication stream, which are not RESP: both directions are
	// then copied as they are.
	stream bool
}

func (c *proxyConn) close() { c.cut(nil, nil) }

// cut closes the connection for f (nil: for no fault) and then reports f
// fired, so that a test that waits for Fired finds the connection closed.
// A connection that ends otherwise still settles its faults: a LoseRequest
// waiting for the replies before its command fires (the command was never
// forwarded), and a LoseReply whose reply never came is given back, to cut
// another command.
func (c *proxyConn) cut(f *Fault, args []string) {
	c.closeOnce.Do(func() {
		c.client.Close()
		c.server.Close()
		close(c.done)
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
		c.mu.Lock()
		drain, drainArgs := c.drainCut, c.drainArgs
		var orphans []*Fault
		for _, o := range c.pending {
			if o.cut != nil {
				orphans = append(orphans, o.cut)
			}
		}
		c.mu.Unlock()
		for _, o := range orphans {
			o.unclaim()
		}
		if f == nil && drain != nil {
			f, args = drain, drainArgs
		}
	})
	if f != nil {
		f.fire(args, &c.p.cuts)
	}
}

var subscribeFamily = map[string]string{
	"SUBSCRIBE": "subscribe", "UNSUBSCRIBE": "unsubscribe",
	"PSUBSCRIBE": "psubscribe", "PUNSUBSCRIBE": "punsubscribe",
	"SSUBSCRIBE": "ssubscribe", "SUNSUBSCRIBE": "sunsubscribe",
}

// requests forwards the client's commands, and cuts at a faulted one.
func (c *proxyConn) requests() {
	defer c.close()
	in := &respReader{r: bufio.NewReaderSize(c.client, 64<<10)}
	out := bufio.NewWriterSize(c.server, 64<<10)
	for {
		raw, args, err := in.command()
		if err != nil {
			return
		}
		o := owed{args: args}
		c.mu.Lock()
		switch name := strings.ToUpper(first(args)); {
		case len(args) == 0:
			o.pushes = -1 // an empty inline command: no reply
		case name == "HELLO" && len(args) > 1 && args[1] == "3":
			c.resp3 = true
		case name == "PSYNC" || name == "SYNC":
			o.stream = true
		case subscribeFamily[name] != "":
			if !c.resp3 || len(args) == 1 {
				c.subscribed = true // RESP2 subscribe mode, or a count only the server knows
			}
			o.pushes, o.kind = len(args)-1, subscribeFamily[name]
		}
		subscribed := c.subscribed
		c.mu.Unlock()
		var f *Fault
		if !subscribed {
			f, o.counted = c.p.match(args, (*Rule).matches)
		}
		if f != nil && (f.rule.Cut == LoseRequest || f.rule.Cut == Delay) {
			if f.rule.Cut == Delay {
				c.p.mu.Lock()
				upstream := c.p.upstream
				c.p.mu.Unlock()
				f.mu.Lock()
				f.held, f.upstream = append([]byte(nil), raw...), upstream
				f.mu.Unlock()
			}
			if err := out.Flush(); err != nil {
				return
			}
			c.mu.Lock()
			c.drainCut, c.drainArgs = f, args
			now := len(c.pending) == 0
			c.mu.Unlock()
			if now {
				c.cut(f, args)
			}
			<-c.done // what the client sends from now on is lost with the connection
			return
		}
		o.cut = f
		if o.pushes >= 0 {
			c.mu.Lock()
			c.pending = append(c.pending, o) // before the server can answer
			c.mu.Unlock()
		}
		if _, err := out.Write(raw); err != nil {
			return
		}
		if f != nil || o.stream || in.r.Buffered() == 0 {
			if err := out.Flush(); err != nil {
				return
			}
		}
		if o.stream { // a replica: from now on nothing on this connection is cut
			_, _ = io.Copy(c.server, in.r)
			return
		}
		if f != nil {
			select {
			case <-c.resume:
			case <-c.done:
				return
			}
		}
	}
}

// replies forwards the server's replies and pushes, and cuts at a faulted
// one.
func (c *proxyConn) replies() {
	defer c.close()
	in := &respReader{r: bufio.NewReaderSize(c.server, 64<<10)}
	out := bufio.NewWriterSize(c.client, 64<<10)
	for {
		typ, raw, strs, err := in.frame()
		if err != nil {
			return
		}
		var answered *owed
		c.mu.Lock()
		push := typ == '>' || (c.subscribed && typ == '*')
		switch {
		case c.subscribed:
		case typ == '>' && len(c.pending) > 0 && c.pending[0].pushes > 0 && strings.EqualFold(first(strs), c.pending[0].kind):
			if c.pending[0].pushes--; c.pending[0].pushes == 0 {
				c.pending = c.pending[1:]
			}
		case typ != '>' && len(c.pending) > 0:
			// Also an error that refused a subscribe-family command.
			answered = &c.pending[0]
			c.pending = c.pending[1:]
		}
		drained := c.drainCut != nil && len(c.pending) == 0
		c.mu.Unlock()

		if push && len(strs) >= 3 {
			channel := strs[1]
			if strings.EqualFold(strs[0], "pmessage") && len(strs) >= 4 {
				channel = strs[2]
			}
			if k := strings.ToLower(strs[0]); k == "message" || k == "smessage" || k == "pmessage" {
				msg := []string{k, channel, strs[len(strs)-1]}
				if f, _ := c.p.match(msg, matchMessage); f != nil {
					_ = out.Flush() // what came before it is delivered
					c.cut(f, msg)
					return
				}
			}
		}
		noscript := answered != nil && bytes.HasPrefix(raw, []byte("-NOSCRIPT"))
		if noscript {
			// Not run: a match that does not count, nor a reply to lose.
			for _, f := range answered.counted {
				f.uncount()
			}
		}
		if answered != nil && answered.cut != nil {
			switch {
			case noscript:
				answered.cut.unclaim()
			case answered.cut.rule.Cut == HoldReply:
				_ = out.Flush() // the replies before it are delivered
				answered.cut.fire(answered.args, &c.p.cuts)
				select {
				case <-answered.cut.release:
				case <-answered.cut.lose:
					c.cut(answered.cut, answered.args)
					return
				case <-c.done:
					return
				}
			default:
				_ = out.Flush() // the replies before it are delivered
				c.cut(answered.cut, answered.args)
				return
			}
		}
		if _, err := out.Write(raw); err != nil {
			return
		}
		if in.r.Buffered() == 0 || drained || answered != nil && answered.cut != nil {
			if err := out.Flush(); err != nil {
				return
			}
		}
		if answered != nil && answered.cut != nil {
			select {
			case c.resume <- struct{}{}:
			case <-c.done:
				return
			}
		}
		if answered != nil && answered.stream {
			if err := out.Flush(); err != nil {
				return
			}
			_, _ = io.Copy(c.client, in.r)
			return
		}
		if drained {
			c.mu.Lock()
			f, args := c.drainCut, c.drainArgs
			c.mu.Unlock()
			c.cut(f, args)
			return
		}
	}
}

func matchMessage(r *Rule, msg []string) bool {
	return r.Channel != "" && strings.Contains(msg[1], r.Channel)
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// respReader reads RESP values and keeps their bytes as read, so that the
// proxy forwards exactly what it received.
type respReader struct {
	r   *bufio.Reader
	raw []byte
}

var errProtocol = errors.New("redistest: proxy: RESP protocol error")

// line reads one line, CRLF included in raw and excluded from the result.
func (rr *respReader) line() (string, error) {
	start := len(rr.raw)
	for {
		b, err := rr.r.ReadSlice('\n')
		rr.raw = append(rr.raw, b...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	l := strings.TrimSuffix(strings.TrimSuffix(string(rr.raw[start:]), "\n"), "\r")
	return l, nil
}

// command reads one command: an array of bulk strings, or an inline one.
func (rr *respReader) command() (raw []byte, args []string, err error) {
	b, err := rr.r.Peek(1)
	if err != nil {
		return nil, nil, err
	}
	if b[0] == '*' {
		_, raw, args, err = rr.frame()
		return raw, args, err
	}
	rr.raw = rr.raw[:0]
	l, err := rr.line()
	if err != nil {
		return nil, nil, err
	}
	return rr.raw, strings.Fields(l), nil
}

// frame reads one whole value (an attribute and the value it annotates
// count as one) and returns its type, its bytes, and for an aggregate the
// values of its scalar elements (nested aggregates as "").
func (rr *respReader) frame() (typ byte, raw []byte, strs []string, err error) {
	rr.raw = rr.raw[:0]
	for {
		typ, strs, err = rr.value(true)
		if err != nil || typ != '|' {
			return typ, rr.raw, strs, err
		}
	}
}

// value reads one value; with top set it collects an aggregate's scalar
// elements. An attribute ('|') is returned as such, so that frame reads the
// value it annotates next; nested ones are skipped here.
func (rr *respReader) value(top bool) (typ byte, strs []string, err error) {
	l, err := rr.line()
	if err != nil {
		return 0, nil, err
	}
	if l == "" {
		return 0, nil, errProtocol
	}
	typ, body := l[0], l[1:]
	switch typ {
	case '+', '-', ':', '_', '#', ',', '(':
		return typ, []string{body}, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: length %q", errProtocol, body)
		}
		if n < 0 {
			return typ, []string{""}, nil
		}
		start := len(rr.raw)
		rr.raw = append(rr.raw, make([]byte, n+2)...)
		if _, err := io.ReadFull(rr.r, rr.raw[start:]); err != nil {
			return 0, nil, err
		}
		return typ, []string{string(rr.raw[start : start+n])}, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: length %q", errProtocol, body)
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for range max(n, 0) {
			et, es, err := rr.value(false)
			if err != nil {
				return 0, nil, err
			}
			if et == '|' { // a nested attribute annotates the element after it
				if et, es, err = rr.value(false); err != nil {
					return 0, nil, err
				}
			}
			if top {
				s := ""
				if !isAggregate(et) && len(es) > 0 {
					s = es[0]
				}
				strs = append(strs, s)
			}
		}
		return typ, strs, nil
	}
	return 0, nil, fmt.Errorf("%w: type %q", errProtocol, typ)
}

func isAggregate(t byte) bool { return strings.IndexByte("*~>%|", t) >= 0 }
