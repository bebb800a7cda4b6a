package reliability

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

// A permit ledger follows every permit of one counting semaphore through what the server ran
// (its MONITOR feed: each script with its request id or waiter record, and the commands the script
// made inside) and through what the clients sent and were told (send.SetSendTrace), so that a
// permit missing at the end is named: which acquisition or grant took it, what each send of it was
// answered, and what, if anything, tried to give it back.
//
// Every unit of the count that leaves it is owned by someone until it comes back:
//   - "acq <rid>": taken by the try of the acquisition rid (DECRBY in the acquire script, or a grant
//     it took over: its HDEL of the grant, then its memo);
//   - "grant <member>": taken by a release for the waiter recorded as member (DECRBY then HSET of
//     the grant in semaphore_wake.lua); it passes to the member's acquisition when a try takes it,
//     or when the member's Client claims it (a plain HDEL of the grant);
//   - a release (the add script, MODE 0 or 1) gives a unit back without a name: permits have no
//     owner. The soak's workers release what their acquisitions took, so the units released
//     balance the acquisitions that succeeded;
//   - a give-back names what it gives back: the add script's MODE 2 an acquisition's rid, the forget
//     script a grant's member.
//
// A nil ledger follows nothing (a deployment of several servers, whose feeds it cannot interleave).
//
// At the end every unit must be back. Units still out are reported with their history; so is an
// acquisition whose units are out while its caller was told it failed (nobody will release them).
type permitLedger struct {
	t    *testing.T
	name string
	addr string
	conn net.Conn
	wg   sync.WaitGroup
	// Which script a SHA is: "acquire", "add", "forget", "try-set", each with its MODE.
	scripts map[string]scriptMode
	// The script of the semaphore the feed is inside: the feed's goroutine alone touches it.
	cur *ledgerRun

	mu        sync.Mutex
	count     int64            // the count as the feed has it
	out       map[string]int64 // owner -> units out
	released  int64            // units released by name-less releases
	history   map[string][]string
	memberRid map[string]string // a waiter record -> its acquisition's rid
	ridMember map[string]string // and back
	unknown   []string          // lines the ledger could not account for
	// What the clients were told, by acquisition rid: "ok" or the error; the acquisition each
	// client's caller has under way (the newest rid its sends name after Begin), and the last one
	// whose caller was told.
	told    map[string]string
	current map[string]string
	last    map[string]string
	// Acquisitions told ok are kept as a count of their units, which the releases balance, once the
	// feed has surely caught up with them (okLag: it runs behind the clients).
	okUnits int64
	okQueue []toldOK
	settled map[string]bool
	faults  []toldOK // what the soak injected, and when
}

type toldOK struct {
	rid string
	at  time.Time
}

// okLag is how far behind the clients the MONITOR feed may be.
const okLag = 10 * time.Second

type scriptMode struct {
	name string
	mode int
}

// ledgerRun is one script run as the feed shows it.
type ledgerRun struct {
	script  scriptMode
	args    []string
	rid     string // the acquisition's, the release's or the give-back's
	member  string // the waiter record it names (acquire, forget)
	pending int64  // units a wake took, not yet named by its grant's HSET
	hdel    string // a grant the acquire script deleted: taken if its memo follows
}

// startPermitLedger follows the semaphore called name on the server at addr, whose count starts at
// permits. It stops with the test.
func startPermitLedger(t *testing.T, addr, name string, permits int64) *permitLedger {
	l := &permitLedger{t: t, name: name, count: permits, out: map[string]int64{}, history: map[string][]string{},
		memberRid: map[string]string{}, ridMember: map[string]string{}, told: map[string]string{}, scripts: map[string]scriptMode{},
		current: map[string]string{}, last: map[string]string{}, settled: map[string]bool{}}
	for sname, s := range map[string]*lua.Script{
		"acquire": lua.Load("semaphore_acquire.lua"),
		"add":     lua.Load("semaphore_add.lua"),
		"try-set": lua.Load("semaphore_try_set.lua"),
		"forget":  lua.Load("semaphore_forget.lua"),
	} {
		l.scripts[s.SHA1()] = scriptMode{sname, 0}
		l.scripts[s.Resent().SHA1()] = scriptMode{sname, 1}
		l.scripts[s.Undo().SHA1()] = scriptMode{sname, 2}
	}
	l.addr = addr
	if err := l.monitor(); err != nil {
		t.Fatal(err)
	}
	send.SetSendTrace(l.sent)
	t.Cleanup(func() {
		send.SetSendTrace(nil)
		l.conn.Close()
		l.wg.Wait()
	})
	return l
}

// monitor starts following the server's MONITOR feed, and returns once the server confirmed it.
func (l *permitLedger) monitor() error {
	conn, err := net.Dial("tcp", l.addr)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(conn, "MONITOR\r\n"); err != nil {
		conn.Close()
		return err
	}
	r := bufio.NewReaderSize(conn, 1<<20)
	if ok, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(ok, "+OK") {
		conn.Close()
		return fmt.Errorf("MONITOR: %q, %v", ok, err)
	}
	l.conn = conn
	l.wg.Go(func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			l.feed(strings.TrimSpace(line))
		}
	})
	return nil
}

// sent hears of every script a client sends (res nil) and what it was answered.
func (l *permitLedger) sent(client string, s *lua.Script, keys, args []string, res *rueidis.RedisResult) {
	if len(keys) == 0 || keys[0] != l.name {
		return
	}
	sm := l.scripts[s.SHA1()]
	rid := ledgerRid(sm, args)
	if rid == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if res == nil {
		// The acquisition under way is the one whose request id is the client's newest: a try of an
		// earlier one may still be on its way (it ran apart from a caller that gave up).
		if _, begun := l.current[client]; begun && sm.name == "acquire" && ridAfter(rid, l.current[client]) {
			l.current[client] = rid
		}
		return
	}
	answer := "error " + fmt.Sprint(res.Error())
	if res.Error() == nil {
		m, _ := res.ToMessage()
		answer = "answer " + m.String()
	}
	l.note(rid, fmt.Sprintf("client %.8s sent %s MODE %d (%s), told %s", client, sm.name, sm.mode, strings.Join(args, " "), answer))
}

// ridAfter reports whether request id a came after b ("" or of another client: before any), by the
// counter after the client's id.
func ridAfter(a, b string) bool {
	i, j := strings.LastIndexByte(a, ':'), strings.LastIndexByte(b, ':')
	if b == "" || j < 0 || i < 0 || a[:i] != b[:j] {
		return true
	}
	x, _ := strconv.ParseInt(a[i+1:], 10, 64)
	y, _ := strconv.ParseInt(b[j+1:], 10, 64)
	return x > y
}

// Begin marks the start of an acquisition by client (its id), whose caller makes one at a time.
func (l *permitLedger) Begin(client string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.current[client] = l.last[client] // a send of an earlier acquisition is not this one
	l.mu.Unlock()
}

// ledgerRid is the request id a script's ARGV names: an acquisition's, a release's, a give-back's
// (the acquisition it gives back), or for forget the waiter record.
func ledgerRid(sm scriptMode, args []string) string {
	switch {
	case sm.name == "acquire" && len(args) == 6:
		return args[5]
	case (sm.name == "add" || sm.name == "try-set") && len(args) == 5:
		return args[4]
	case sm.name == "forget" && len(args) == 4:
		return args[0]
	}
	return ""
}

// Told records what the caller of client's acquisition under way was told: nil, or its error.
func (l *permitLedger) Told(client string, err error) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rid := l.current[client]
	delete(l.current, client)
	if rid == "" || rid == l.last[client] {
		return // nothing was sent
	}
	l.last[client] = rid
	if err != nil {
		l.told[rid] = err.Error()
		l.note(rid, "the caller was told "+l.told[rid])
		return
	}
	// Its units are the workers' to release: they are only counted once the feed has caught up.
	l.told[rid] = "ok"
	l.okQueue = append(l.okQueue, toldOK{rid, time.Now()})
	l.settle(time.Now().Add(-okLag))
}

// settle counts the units of the acquisitions told ok before by, and forgets their histories.
func (l *permitLedger) settle(by time.Time) {
	i := 0
	for ; i < len(l.okQueue) && l.okQueue[i].at.Before(by); i++ {
		rid := l.okQueue[i].rid
		if m := l.ridMember[rid]; l.out["acq "+rid] == 0 && l.out["grant "+m] > 0 {
			// Told ok without a try that took permits: its Client claimed the grant, whose delete
			// the feed has not shown (it failed, or went to a server restarted since).
			l.move("grant "+m, "acq "+rid, l.out["grant "+m], "claimed by its waiter's Client (its delete unseen)")
		}
		if n := l.out["acq "+rid]; n != 1 { // the soak's acquisitions take one permit each
			h := append(l.history[rid], "its waiter record "+l.ridMember[rid]+":")
			l.unknown = append(l.unknown, fmt.Sprintf("an acquisition told ok took %d units:\n    %s",
				n, strings.Join(append(h, l.history[l.ridMember[rid]]...), "\n    ")))
		}
		l.okUnits += l.out["acq "+rid]
		delete(l.out, "acq "+rid)
		delete(l.history, rid)
		delete(l.told, rid)
		l.settled[rid] = true
	}
	l.okQueue = l.okQueue[i:]
}

// Fault records a fault the soak injected.
func (l *permitLedger) Fault(what string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults = append(l.faults, toldOK{what, time.Now()})
}

// faultsNear returns the faults from 5 s before the first line of history to its last line.
func (l *permitLedger) faultsNear(history []string) []string {
	if len(history) == 0 {
		return nil
	}
	at := func(line string) time.Time {
		t, _ := time.ParseInLocation("15:04:05.000000", line[:min(len(line), 15)], time.Local)
		now := time.Now()
		return time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
	}
	from, to := at(history[0]).Add(-5*time.Second), at(history[len(history)-1]).Add(time.Second)
	var out []string
	for _, f := range l.faults {
		if f.at.After(from) && f.at.Before(to) {
			out = append(out, f.at.Format("15:04:05.000000")+" "+f.rid)
		}
	}
	return out
}

func (l *permitLedger) note(owner, what string) {
	h := l.history[owner]
	if len(h) < 40 {
		l.history[owner] = append(h, time.Now().Format("15:04:05.000000")+" "+what)
	}
}

// feed reads one line of the MONITOR feed.
func (l *permitLedger) feed(line string) {
	inScript := strings.Contains(line, " lua] ")
	if (inScript && l.cur == nil) || (!inScript && !strings.Contains(line, l.name)) {
		if !inScript {
			l.cur = nil // another client's command: the script before it is over
		}
		return
	}
	_, rest, ok := strings.Cut(line, " [")
	if !ok {
		return
	}
	from, rest, ok := strings.Cut(rest, "] ")
	if !ok {
		return
	}
	args := monitorArgs(rest)
	if len(args) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !strings.HasSuffix(from, " lua") {
		l.cur = nil
		l.top(args)
		return
	}
	if l.cur != nil {
		l.inside(args)
	}
}

// top reads a command a client sent.
func (l *permitLedger) top(args []string) {
	cmd := strings.ToUpper(args[0])
	grants := "redisync_semaphore_grants:{" + l.name + "}"
	switch {
	case (cmd == "EVALSHA" || cmd == "EVAL") && len(args) >= 3:
		sha := args[1]
		if cmd == "EVAL" {
			sum := sha1.Sum([]byte(args[1]))
			sha = hex.EncodeToString(sum[:])
		}
		n, err := strconv.Atoi(args[2])
		if err != nil || len(args) < 3+n || n == 0 || args[3] != l.name {
			return
		}
		sm, known := l.scripts[sha]
		if !known {
			l.unknown = append(l.unknown, strings.Join(args, " "))
			return
		}
		r := &ledgerRun{script: sm, args: args[3+n:]}
		r.rid = ledgerRid(sm, r.args)
		switch sm.name {
		case "acquire":
			r.member = r.args[2]
			if r.member != "" {
				l.memberRid[r.member], l.ridMember[r.rid] = r.rid, r.member
			}
		case "forget":
			r.member = r.args[0]
		}
		l.cur = r
		l.note(r.rid, fmt.Sprintf("server ran %s MODE %d (%s)", sm.name, sm.mode, strings.Join(r.args, " ")))
	case cmd == "HDEL" && len(args) >= 3 && args[1] == grants:
		for _, m := range args[2:] { // a Client claimed the grant: its acquisition has the unit
			n := l.out["grant "+m]
			switch rid := l.memberRid[m]; {
			case n == 0:
			case l.settled[rid]: // told ok before the Client deleted the grant
				l.give("grant "+m, n, "claimed by its waiter's Client")
				l.okUnits += n
			default:
				l.move("grant "+m, "acq "+rid, n, "claimed by its waiter's Client")
			}
		}
	}
}

// inside reads a command the current script made.
func (l *permitLedger) inside(args []string) {
	r := l.cur
	cmd := strings.ToLower(args[0])
	grants := "redisync_semaphore_grants:{" + l.name + "}"
	key := ""
	if len(args) > 1 {
		key = args[1]
	}
	switch {
	case (cmd == "decrby" || cmd == "incrby") && key == l.name && len(args) == 3:
		n, _ := strconv.ParseInt(args[2], 10, 64)
		if cmd == "decrby" {
			n = -n
		}
		l.count += n
		switch {
		case n < 0 && r.script.name == "acquire":
			l.take("acq "+r.rid, -n, "taken by its try")
		case n < 0: // a wake: the grant's HSET names it
			r.pending -= n
		case r.script.name == "add" && r.script.mode == 2:
			l.give("acq "+r.rid, n, "given back (add MODE 2)")
		case r.script.name == "forget":
			l.give("grant "+r.member, n, "given back by forget")
		default:
			l.released += n
			l.note(r.rid, fmt.Sprintf("released %d", n))
		}
	case cmd == "hset" && key == grants && len(args) >= 3:
		want, _ := strconv.ParseInt(args[2][strings.LastIndexByte(args[2], ':')+1:], 10, 64)
		r.pending -= want // the DECRBY of the wake that made this grant
		l.take("grant "+args[2], want, fmt.Sprintf("granted by %s %s", r.script.name, r.rid))
	case cmd == "hdel" && key == grants && len(args) == 3 && r.script.name == "acquire":
		r.hdel = args[2]
	case cmd == "set" && strings.HasPrefix(key, "redisync_once:") && r.hdel != "":
		if n := l.out["grant "+r.hdel]; n > 0 { // the grant was there: the try took it
			l.move("grant "+r.hdel, "acq "+r.rid, n, "taken over by a try")
		}
		r.hdel = ""
	case cmd == "get" && key == l.name: // the grant was not there: the try reads the count
		r.hdel = ""
	}
}

func (l *permitLedger) take(owner string, n int64, why string) {
	if id, ok := strings.CutPrefix(owner, "acq "); ok && l.settled[id] {
		l.unknown = append(l.unknown, fmt.Sprintf("%d more unit(s) taken by %s after its caller was told it succeeded: %s", n, owner, why))
	}
	l.out[owner] += n
	l.note(strings.TrimPrefix(strings.TrimPrefix(owner, "acq "), "grant "), fmt.Sprintf("%d taken: %s", n, why))
}

func (l *permitLedger) give(owner string, n int64, why string) {
	l.out[owner] -= n
	if l.out[owner] == 0 {
		delete(l.out, owner)
	}
	l.note(strings.TrimPrefix(strings.TrimPrefix(owner, "acq "), "grant "), fmt.Sprintf("%d back: %s", n, why))
}

func (l *permitLedger) move(from, to string, n int64, why string) {
	l.give(from, n, "passed on to "+to+": "+why)
	l.take(to, n, "from "+from+": "+why)
}

// Restarted follows the semaphore on a server restarted without persistence, which has lost it with
// everything beside it: what was out went with it. The caller has made sure that nothing was.
func (l *permitLedger) Restarted() {
	if l == nil {
		return
	}
	l.conn.Close()
	l.wg.Wait()
	l.cur = nil // the feed's goroutine has ended
	l.mu.Lock()
	// A grant its waiter's Client claimed, whose HDEL went to the restarted server: the unit is the
	// acquisition's, which was released.
	for owner, n := range l.out {
		if m, ok := strings.CutPrefix(owner, "grant "); ok {
			switch rid := l.memberRid[m]; {
			case l.settled[rid]:
				l.give(owner, n, "claimed by its waiter's Client before a restart")
				l.okUnits += n
			case l.told[rid] == "ok":
				l.move(owner, "acq "+rid, n, "claimed by its waiter's Client before a restart")
			}
		}
	}
	l.settle(time.Now())
	l.out, l.count = map[string]int64{}, 0
	l.mu.Unlock()
	testkit.Eventually(l.t, 20*time.Second, func() error { return l.monitor() })
}

// Set says that the semaphore was set to n permits (TrySetPermits writes no INCRBY to follow).
func (l *permitLedger) Set(n int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.count = n
	l.mu.Unlock()
}

// Report returns what the ledger finds wrong, given how many permits the semaphore should have:
// units out whose acquisition's caller was told it failed, grants still out, and a count that does
// not add up, each with the history of its owner.
func (l *permitLedger) Report(permits int64) []string {
	if l == nil {
		return nil
	}
	time.Sleep(200 * time.Millisecond) // the feed's last lines
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(time.Now())
	var bad []string
	owners := make([]string, 0, len(l.out))
	for owner := range l.out {
		owners = append(owners, owner)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		n := l.out[owner]
		kind, id, _ := strings.Cut(owner, " ")
		h := l.history[id]
		if rid := l.memberRid[id]; kind == "grant" && rid != "" {
			h = append(append(h, "its acquisition "+rid+":"), l.history[rid]...)
			id = rid
		}
		bad = append(bad, fmt.Sprintf("%d unit(s) out with %s, which no release or give-back will return (caller told %q):\n    %s\n  faults around it:\n    %s",
			n, owner, l.told[id], strings.Join(h, "\n    "), strings.Join(l.faultsNear(h), "\n    ")))
	}
	if l.okUnits != l.released {
		bad = append(bad, fmt.Sprintf("acquisitions told ok took %d units, releases returned %d", l.okUnits, l.released))
	}
	if l.count != permits {
		bad = append(bad, fmt.Sprintf("the feed's count is %d, want %d", l.count, permits))
	}
	for _, u := range l.unknown {
		bad = append(bad, "a script the ledger does not know ran on the semaphore: "+u)
	}
	return bad
}

// monitorArgs splits a MONITOR line's quoted arguments, undoing its escapes.
func monitorArgs(s string) []string {
	var out []string
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return out
		}
		s = s[i+1:]
		var b strings.Builder
		for len(s) > 0 && s[0] != '"' {
			c := s[0]
			s = s[1:]
			if c != '\\' || len(s) == 0 {
				b.WriteByte(c)
				continue
			}
			e := s[0]
			s = s[1:]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if len(s) >= 2 {
					v, _ := strconv.ParseUint(s[:2], 16, 8)
					b.WriteByte(byte(v))
					s = s[2:]
				}
			default:
				b.WriteByte(e)
			}
		}
		if len(s) > 0 {
			s = s[1:]
		}
		out = append(out, b.String())
	}
}
