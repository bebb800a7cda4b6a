package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// -handover: what bounds the contended hand-over (B4) and the burst after an idle spell (B14) over
// loopback and at 200 us round trips, measured on its own. In one interleaved run, at each round trip
// and number of contenders, it times the same loop as B4 at cs 0 for rlock and for two hand-overs in
// raw rueidis that do nothing but hand over:
//
//   - floor-grant: the release pops the oldest waiter's token from a list, writes it into the key and
//     PUBLISHes it on that waiter's channel; the waiter returns on the message. rlock's protocol (a
//     directed hand-over: one release, one message) with the least server and client work.
//   - floor-wake: SET NX PX to acquire; the release DELs and PUBLISHes on the key's channel, and every
//     waiter, subscribed, tries again on the message (one round trip more than a directed hand-over).
//
// Each hand-over is split by stamps taken outside the libraries: the holder's unlock call (t0) and its
// return (t1), the arrival of the waiter's last Pub/Sub message in its client's reader (t2, a hook
// around the dedicated connection's OnMessage), and the waiter's Lock returning (t3); the server's
// time in the release script comes from SLOWLOG. It also runs the 8-contender case with redis-server
// (and the delay proxy) pinned to one core and the clients to the other, and with the clients at
// GOMAXPROCS 1; and B14's bursts for the three.
//
//	cd bench && go run . -handover [-quick]

// msgStamp holds what a client's wrapper saw last (unix ns): a Pub/Sub message parsed by its
// reader, and the send and the reply of a release script (an EVALSHA of one of shas); and it counts
// the commands its client sends outside Pub/Sub.
type msgStamp struct {
	msg, send, reply atomic.Int64
	shas             atomic.Pointer[map[string]bool]
	sent             atomic.Int64 // commands sent, a script being one
}

func (s *msgStamp) wrap(h rueidis.PubSubHooks) rueidis.PubSubHooks {
	on := h.OnMessage
	h.OnMessage = func(m rueidis.PubSubMessage) {
		s.msg.Store(time.Now().UnixNano())
		if on != nil {
			on(m)
		}
	}
	return h
}

// msgStampingClient stamps every message its dedicated connections receive, before the library sees
// it, and the send and reply of every release script.
type msgStampingClient struct {
	rueidis.Client
	s *msgStamp
}

func (c msgStampingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.s.sent.Add(1)
	args := cmd.Commands() // read before Do: rueidis recycles a command once answered
	var rel bool
	if shas := c.s.shas.Load(); shas != nil && len(args) > 1 && args[0] == "EVALSHA" {
		rel = (*shas)[args[1]]
	}
	if rel {
		c.s.send.Store(time.Now().UnixNano())
	}
	res := c.Client.Do(ctx, cmd)
	if rel {
		c.s.reply.Store(time.Now().UnixNano())
	}
	return res
}

func (c msgStampingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.s.sent.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

func (c msgStampingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, cancel := c.Client.Dedicate()
	return msgStampingDedicated{dc, c.s}, cancel
}

type msgStampingDedicated struct {
	rueidis.DedicatedClient
	s *msgStamp
}

func (c msgStampingDedicated) SetPubSubHooks(h rueidis.PubSubHooks) <-chan error {
	return c.DedicatedClient.SetPubSubHooks(c.s.wrap(h))
}

func stampedRueidis(d *deployment, s *msgStamp) (rueidis.Client, error) {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs, DisableCache: true})
	if err != nil {
		return nil, err
	}
	return msgStampingClient{rdb, s}, nil
}

// --- the notify-driven floors ---

var (
	wakeFloorRelease = rueidis.NewLuaScript(`if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`)
	grantFloorTry = rueidis.NewLuaScript(`if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
redis.call('rpush', KEYS[2], ARGV[1])
return 0`)
	// ARGV[3] 'leave': a waiter that gives up takes its token out of the line, and hands over a
	// grant it did not see.
	grantFloorRelease = rueidis.NewLuaScript(`if ARGV[3] == 'leave' then redis.call('lrem', KEYS[2], 0, ARGV[1]) end
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
while true do
  local nxt = redis.call('lpop', KEYS[2])
  if not nxt then
    redis.call('del', KEYS[1])
    return 1
  end
  redis.call('set', KEYS[1], nxt, 'PX', ARGV[2])
  if redis.call('publish', string.match(nxt, '^[^|]*'), nxt) > 0 then return 1 end
end`)
)

// notifyFloor is one client of a floor: a rueidis client, and a dedicated connection on which it
// subscribes (floor-wake: each key's channel; floor-grant: a channel of its own).
type notifyFloor struct {
	rdb    rueidis.Client
	dc     rueidis.DedicatedClient
	free   func()
	grant  bool
	id     string
	seq    atomic.Int64
	stamp  *msgStamp
	mu     sync.Mutex
	chans  map[string]chan string
	broken <-chan error
}

func openNotifyFloor(d *deployment, grant bool, s *msgStamp) (*notifyFloor, error) {
	rdb, err := stampedRueidis(d, s)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 8)
	rand.Read(b)
	f := &notifyFloor{rdb: rdb, grant: grant, id: "hf:" + hex.EncodeToString(b), stamp: s, chans: map[string]chan string{}}
	f.dc, f.free = rdb.Dedicate()
	f.broken = f.dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: f.deliver})
	if grant {
		if _, err := f.sub(context.Background(), f.id); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (f *notifyFloor) deliver(m rueidis.PubSubMessage) {
	f.mu.Lock()
	ch := f.chans[m.Channel]
	f.mu.Unlock()
	select {
	case ch <- m.Message:
	default: // floor-wake: a wake-up is pending already
	}
}

// sub subscribes to name once, and returns where its messages arrive.
func (f *notifyFloor) sub(ctx context.Context, name string) (chan string, error) {
	f.mu.Lock()
	ch, ok := f.chans[name]
	if !ok {
		ch = make(chan string, 64)
		f.chans[name] = ch
	}
	f.mu.Unlock()
	if ok {
		return ch, nil
	}
	return ch, f.dc.Do(ctx, f.dc.B().Subscribe().Channel(name).Build()).Error()
}

func (f *notifyFloor) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	if f.grant {
		return f.lockGrant(ctx, key)
	}
	return f.lockWake(ctx, key)
}

func (f *notifyFloor) token() string { return f.id + "|" + strconv.FormatInt(f.seq.Add(1), 10) }

var px = strconv.FormatInt(holdTTL.Milliseconds(), 10)

func (f *notifyFloor) lockWake(ctx context.Context, key string) (func(context.Context) error, error) {
	ch, err := f.sub(ctx, key+":ch")
	if err != nil {
		return nil, err
	}
	tok := f.token()
	for {
		select { // a wake-up from before this try says nothing about the hold it may find
		case <-ch:
		default:
		}
		err := f.rdb.Do(ctx, f.rdb.B().Set().Key(key).Value(tok).Nx().PxMilliseconds(holdTTL.Milliseconds()).Build()).Error()
		if err == nil {
			return func(ctx context.Context) error {
				return wakeFloorRelease.Exec(ctx, f.rdb, []string{key, key + ":ch"}, []string{tok}).Error()
			}, nil
		}
		if !rueidis.IsRedisNil(err) {
			return nil, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (f *notifyFloor) lockGrant(ctx context.Context, key string) (func(context.Context) error, error) {
	ch, err := f.sub(ctx, f.id)
	if err != nil {
		return nil, err
	}
	tok := f.token()
	keys := []string{key, key + ":line"}
	release := func(ctx context.Context) error {
		return grantFloorRelease.Exec(ctx, f.rdb, keys, []string{tok, px, ""}).Error()
	}
	got, err := grantFloorTry.Exec(ctx, f.rdb, keys, []string{tok, px}).AsInt64()
	if err != nil {
		return nil, err
	}
	if got == 1 {
		return release, nil
	}
	for {
		select {
		case m := <-ch:
			if m == tok {
				return release, nil
			}
		case <-ctx.Done():
			err := grantFloorRelease.Exec(context.Background(), f.rdb, keys, []string{tok, px, "leave"}).Error()
			return nil, errors.Join(ctx.Err(), err)
		}
	}
}

func (f *notifyFloor) Close() {
	f.dc.Close()
	f.free()
	f.rdb.Close()
}

// --- one slice of hand-overs, split by stamps ---

type release struct {
	seq        int64
	t0, t1     int64 // unlock called, unlock returned (unix ns)
	send, rply int64 // its release script sent, answered (0: not seen)
}

type grant struct {
	seq    int64 // the release it followed
	t2, t3 int64 // the waiter's last message arrived, its Lock returned (unix ns)
}

// handSplit is one hand-over from one client to another: total (t3 - t0, B4's handoff), and, where
// the stamps fall in order, pre (unlock called to its script sent: the library's client work),
// script (the script sent to its reply, in the holder), push (the script sent to the message in the
// waiter's reader: the round trip, the server's queue and the script) and wake (the message to the
// waiter's Lock returning: the library's dispatch and the scheduler).
type handSplit struct {
	total, pre, script, push, wake time.Duration
	sent, stamped                  bool
}

// splitHandovers joins each grant to the release it followed.
func splitHandovers(rels []release, grants []grant) []handSplit {
	by := make(map[int64]release, len(rels))
	for _, r := range rels {
		by[r.seq] = r
	}
	var out []handSplit
	for _, g := range grants {
		r, ok := by[g.seq]
		if !ok {
			continue
		}
		h := handSplit{total: time.Duration(g.t3 - r.t0)}
		if r.t0 <= r.send && r.send <= r.rply && r.rply <= r.t1 {
			h.sent, h.pre, h.script = true, time.Duration(r.send-r.t0), time.Duration(r.rply-r.send)
		}
		if h.sent && r.send <= g.t2 && g.t2 <= g.t3 {
			h.stamped, h.push, h.wake = true, time.Duration(g.t2-r.send), time.Duration(g.t3-g.t2)
		}
		out = append(out, h)
	}
	return out
}

// handSummary is the p50 of each part of a slice's hand-overs, and what share of them the waiter's
// message stamps split.
type handSummary struct {
	n                              int
	stampedShare                   float64
	total, pre, script, push, wake time.Duration
}

func summarize(hs []handSplit) handSummary {
	var total, pre, script, push, wake []time.Duration
	for _, h := range hs {
		total = append(total, h.total)
		if h.sent {
			pre = append(pre, h.pre)
			script = append(script, h.script)
		}
		if h.stamped {
			push = append(push, h.push)
			wake = append(wake, h.wake)
		}
	}
	p50 := func(d []time.Duration) time.Duration { sortDurations(d); return percentile(d, .5) }
	s := handSummary{n: len(hs), total: p50(total), pre: p50(pre), script: p50(script), push: p50(push), wake: p50(wake)}
	if len(hs) > 0 {
		s.stampedShare = float64(len(push)) / float64(len(hs))
	}
	return s
}

type relMark struct {
	seq int64
	by  int
}

// handoverSlice runs B4's loop at cs 0 on key for d: every locker locks, unlocks at once, and locks
// again. It returns the hand-overs between clients and the acquisitions made.
func handoverSlice(lockers []locker, stamps []*msgStamp, key string, d time.Duration) ([]handSplit, int64, error) {
	k := len(lockers)
	var (
		sec  section
		last atomic.Pointer[relMark]
		seq  atomic.Int64
		wg   sync.WaitGroup
	)
	rels := make([][]release, k)
	grants := make([][]grant, k)
	counts := make([]int64, k)
	errs := make([]error, k)
	ctx := context.Background()
	end := time.Now().Add(d).UnixNano()
	for i, lk := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().UnixNano() < end {
				unlock, err := lockWithin(ctx, lk, key, attemptBound)
				t3 := time.Now().UnixNano()
				if err != nil {
					if gaveUp(err) {
						continue
					}
					errs[i] = err
					return
				}
				sec.enter()
				if t3 < end {
					counts[i]++
					if m := last.Load(); m != nil && m.by != i {
						grants[i] = append(grants[i], grant{seq: m.seq, t2: stamps[i].msg.Load(), t3: t3})
					}
				}
				sec.leave()
				n := seq.Add(1)
				last.Store(&relMark{seq: n, by: i})
				t0 := time.Now().UnixNano()
				err = unlock(ctx)
				rels[i] = append(rels[i], release{seq: n, t0: t0, t1: time.Now().UnixNano(), send: stamps[i].send.Load(), rply: stamps[i].reply.Load()})
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	if n := sec.overlaps.Load(); n > 0 {
		return nil, 0, fmt.Errorf("MUTUAL EXCLUSION BROKEN: %d overlapping holders", n)
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	return splitHandovers(slices.Concat(rels...), slices.Concat(grants...)), n, nil
}

// --- the server's side: SLOWLOG and commandstats ---

// slowEntries reads SLOWLOG: each command's duration in us, with its first two arguments.
type slowEntry struct {
	cmd, arg string
	us       int64
}

func readSlowlog(rdb rueidis.Client) ([]slowEntry, error) {
	entries, err := rdb.Do(context.Background(), rdb.B().Arbitrary("SLOWLOG", "GET", "-1").Build()).ToArray()
	if err != nil {
		return nil, err
	}
	var out []slowEntry
	for _, e := range entries {
		f, err := e.ToArray()
		if err != nil || len(f) < 4 {
			continue
		}
		d, _ := f[2].AsInt64()
		args, _ := f[3].AsStrSlice()
		se := slowEntry{us: d}
		if len(args) > 0 {
			se.cmd = strings.ToLower(args[0])
		}
		if len(args) > 1 {
			se.arg = args[1]
		}
		out = append(out, se)
	}
	return out, nil
}

func slowlogReset(rdb rueidis.Client) error {
	return rdb.Do(context.Background(), rdb.B().Arbitrary("SLOWLOG", "RESET").Build()).Error()
}

// releaseSHAs finds which scripts a library's release runs: the EVALSHAs of one uncontended unlock.
func releaseSHAs(rdb rueidis.Client, lk locker, key string) (map[string]bool, error) {
	ctx := context.Background()
	for range 2 { // the first may load the scripts
		unlock, err := lk.Lock(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := slowlogReset(rdb); err != nil {
			return nil, err
		}
		if err := unlock(ctx); err != nil {
			return nil, err
		}
	}
	es, err := readSlowlog(rdb)
	if err != nil {
		return nil, err
	}
	shas := map[string]bool{}
	for _, e := range es {
		if e.cmd == "evalsha" {
			shas[e.arg] = true
		}
	}
	if len(shas) == 0 {
		return nil, errors.New("no EVALSHA in the release")
	}
	return shas, nil
}

// serverCost is the server's time (us) and calls in every command but the harness's own, from
// commandstats before and after.
func serverCost(before, after map[string]cmdStat) (usec, calls float64) {
	for name, st := range after {
		switch name {
		case "info", "slowlog", "ping", "config":
			continue
		}
		usec += st.usec - before[name].usec
		calls += st.calls - before[name].calls
	}
	return usec, calls
}

// --- CPU placement ---

// placement is where the clients and the server run during a cell.
type placement struct {
	name  string
	apply func(pids placed) (undo func(), err error)
}

// placed are the processes a placement moves: the bench (every client), redis-server, the proxies.
type placed struct{ server, proxies []int }

func taskset(cpus string, pids ...int) error {
	for _, pid := range pids {
		if out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			return fmt.Errorf("taskset %s %d: %v: %s", cpus, pid, err, out)
		}
	}
	return nil
}

var placements = []placement{
	{"shared", func(placed) (func(), error) { return func() {}, nil }},
	// The clients get one core, and a P of their own on it: with two Ps on one core, a goroutine
	// runnable on the descheduled thread waits for the kernel's next time slice.
	{"pinned", func(p placed) (func(), error) {
		all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
		prev := runtime.GOMAXPROCS(1)
		undo := func() {
			taskset(all, append(append([]int{os.Getpid()}, p.server...), p.proxies...)...)
			runtime.GOMAXPROCS(prev)
		}
		if err := taskset("0", append(slices.Clone(p.server), p.proxies...)...); err != nil {
			undo()
			return nil, err
		}
		if err := taskset("1", os.Getpid()); err != nil {
			undo()
			return nil, err
		}
		return undo, nil
	}},
	{"gomaxprocs1", func(placed) (func(), error) {
		prev := runtime.GOMAXPROCS(1)
		return func() { runtime.GOMAXPROCS(prev) }, nil
	}},
}

// counted returns how many commands the clients of ss send from now on, when asked.
type sentCount struct {
	ss   []*msgStamp
	from int64
}

func counted(ss []*msgStamp) sentCount {
	c := sentCount{ss: ss}
	c.from = c.now()
	return c
}

func (c sentCount) now() int64 {
	var n int64
	for _, s := range c.ss {
		n += s.sent.Load()
	}
	return n
}

func (c sentCount) sub() int64 { return c.now() - c.from }

// pingBeside sends one PING a millisecond on rdb while a slice runs: the round trip under the
// slice's load, beside the idle one.
type pingBeside struct {
	stop chan struct{}
	lat  chan []time.Duration
}

func startPings(rdb rueidis.Client) pingBeside {
	p := pingBeside{stop: make(chan struct{}), lat: make(chan []time.Duration, 1)}
	go func() {
		var lat []time.Duration
		defer func() { p.lat <- lat }()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			t := time.Now()
			if rdb.Do(context.Background(), rdb.B().Ping().Build()).Error() != nil {
				return
			}
			lat = append(lat, time.Since(t))
		}
	}()
	return p
}

// p50 stops the PINGs and returns their median.
func (p pingBeside) p50() time.Duration {
	close(p.stop)
	lat := <-p.lat
	sortDurations(lat)
	return percentile(lat, .5)
}

// --- the mode ---

type hoLib struct {
	name string
	open func(d *deployment, s *msgStamp) (locker, error)
}

var hoLibs = []hoLib{
	{"floor-grant", func(d *deployment, s *msgStamp) (locker, error) { return openNotifyFloor(d, true, s) }},
	{"floor-wake", func(d *deployment, s *msgStamp) (locker, error) { return openNotifyFloor(d, false, s) }},
	{"redisync", func(d *deployment, s *msgStamp) (locker, error) {
		rdb, err := stampedRueidis(d, s)
		if err != nil {
			return nil, err
		}
		c, err := redisync.Wrap(rdb)
		if err != nil {
			rdb.Close()
			return nil, err
		}
		return &redisyncLocker{c}, nil
	}},
}

// hoClients are one library's clients on one deployment, with their stamps.
type hoClients struct {
	lockers []locker
	stamps  []*msgStamp
}

type hoCell struct {
	dep   int // index into the deployments
	k     int
	place placement
}

// hoFig is one library's figures in one cell of one round.
type hoFig struct {
	sum       handSummary
	acqPerS   float64
	releaseUs float64       // p50 of the release script's time in the server (SLOWLOG)
	srvUs     float64       // the server's us per acquisition in commands (commandstats)
	srvCalls  float64       // the server's calls per acquisition, a script's inner calls included
	cmds      float64       // commands the clients sent per acquisition, a script being one
	loaded    time.Duration // p50 of a PING a millisecond during the slice
	cpu       cpuUse        // per acquisition
	busy      float64       // the bench's processes' CPU over the slice, in cores
	box       float64       // the machine's CPU over the slice, in cores (everyone's)
}

// hoCols are the figures of a hoFig, in this order.
var hoCols = []string{"acq/s", "ld PING", "hand", "pre", "script", "push", "wake", "split%", "release", "srv us", "calls", "cmds", "cli cpu", "srv cpu", "pxy cpu", "ours%", "box%"}

func (f hoFig) cols() []float64 {
	s := f.sum
	return []float64{f.acqPerS, us(f.loaded), us(s.total), us(s.pre), us(s.script), us(s.push), us(s.wake), 100 * s.stampedShare, f.releaseUs, f.srvUs, f.srvCalls, f.cmds,
		f.cpu.client, f.cpu.server, f.cpu.proxy, 100 * f.busy / float64(runtime.NumCPU()), 100 * f.box / float64(runtime.NumCPU())}
}

// cpuUse is CPU time in us: the bench process's (every client), redis-server's, the delay proxies'.
type cpuUse struct{ client, server, proxy float64 }

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{a.client - b.client, a.server - b.server, a.proxy - b.proxy}
}

func (a cpuUse) div(n float64) cpuUse { return cpuUse{a.client / n, a.server / n, a.proxy / n} }

func (a cpuUse) sum() float64 { return a.client + a.server + a.proxy }

func readCPU(server int, proxies []int) cpuUse {
	c := cpuUse{client: processCPU(), server: procCPU(server)}
	for _, p := range proxies {
		c.proxy += procCPU(p)
	}
	return c
}

// procCPU is the user and system CPU a process has used, in us (clock ticks of 10 ms).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // the name may hold spaces
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) * 1e6 / 100
}

// machineBusy is the CPU every process on the machine has used (/proc/stat), in us.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var busy float64
	for i, v := range strings.Fields(line)[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy * 1e6 / 100
}

func printCols(w io.Writer, head string, vals []float64) {
	fmt.Fprint(w, head)
	for _, v := range vals {
		fmt.Fprintf(w, " %7.0f", v)
	}
	fmt.Fprintln(w)
}

func handoverMode(w io.Writer, quick bool) error {
	began := time.Now()
	rounds, slice, idle, bursts := 4, 1500*time.Millisecond, 12*time.Second, 4
	if quick {
		rounds, slice, idle, bursts = 1, 400*time.Millisecond, 1500*time.Millisecond, 1
	}
	stopServersOnInterrupt()
	defer runCleanup()
	srv, err := redistest.NewServer(redistest.Config{})
	if err != nil {
		return err
	}
	atExit(func() { srv.Close() })
	for _, kv := range [][2]string{{"slowlog-log-slower-than", "0"}, {"slowlog-max-len", "100000"}} {
		if _, err := srv.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
			return err
		}
	}
	direct := standalone(srv)
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: direct.addrs, DisableCache: true})
	if err != nil {
		return err
	}
	defer admin.Close()
	m := describe(srv)
	r := &run{dep: direct}
	if r.rtt, err = roundTrip(direct); err != nil {
		return err
	}
	m.RTT = us(r.rtt)
	if m.ProxyRTT, err = proxyRoundTrip(direct); err != nil {
		return err
	}
	r.target = 200 * time.Microsecond
	if err := r.calibrate(direct, time.Duration(m.ProxyRTT*float64(time.Microsecond))); err != nil {
		return err
	}
	delayed, err := r.via(direct)
	if err != nil {
		return err
	}
	atExit(r.closeProxies)
	deps := []*deployment{direct, delayed}
	depNames := []string{"loopback", "200us"}
	pids := placed{server: []int{srv.PID()}}
	for _, p := range r.proxies {
		pids.proxies = append(pids.proxies, p.cmd.Process.Pid)
	}
	fmt.Fprintf(w, "hand-over layer (%d rounds, slices of %v, libraries interleaved)\n%s\n", rounds, slice, m)
	fmt.Fprintf(w, "delay proxy: %v each way (its own cost at 0 delay: PING %.0f us against %.0f us direct)\n", r.oneWay.Round(time.Microsecond), m.ProxyRTT, m.RTT)
	fmt.Fprintln(w, "SLOWLOG logs every command (slowlog-log-slower-than 0) for the release script's time in the server")

	// A client per deployment for the PINGs beside the slices.
	var pingers []rueidis.Client
	for _, d := range deps {
		rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs, DisableCache: true})
		if err != nil {
			return err
		}
		defer rdb.Close()
		pingers = append(pingers, rdb)
	}
	// Every library's 8 clients on each deployment, open for the whole run.
	clients := make([][]*hoClients, len(deps)) // [dep][lib]
	shas := map[string]map[string]bool{}
	for di, d := range deps {
		for _, l := range hoLibs {
			hc := &hoClients{}
			for range 8 {
				s := new(msgStamp)
				lk, err := l.open(d, s)
				if err != nil {
					return fmt.Errorf("%s: %w", l.name, err)
				}
				hc.lockers = append(hc.lockers, lk)
				hc.stamps = append(hc.stamps, s)
			}
			defer func() {
				for _, lk := range hc.lockers {
					lk.Close()
				}
			}()
			clients[di] = append(clients[di], hc)
			if di == 0 {
				if shas[l.name], err = releaseSHAs(admin, hc.lockers[0], "ho:probe:"+l.name); err != nil {
					return fmt.Errorf("%s: %w", l.name, err)
				}
			}
			for _, st := range hc.stamps {
				m := shas[l.name]
				st.shas.Store(&m)
			}
			// Warm: connections dialled, scripts loaded, subscriptions made.
			if _, _, err := handoverSlice(hc.lockers, hc.stamps, fmt.Sprintf("ho:%d:%s", di, l.name), slice/4); err != nil {
				return fmt.Errorf("%s warming: %w", l.name, err)
			}
		}
	}

	var found []string
	for _, l := range hoLibs {
		found = append(found, fmt.Sprintf("%s %d", l.name, len(shas[l.name])))
	}
	fmt.Fprintf(w, "release scripts found (EVALSHAs of one uncontended unlock): %s\n", strings.Join(found, ", "))

	var cells []hoCell
	for di := range deps {
		cells = append(cells, hoCell{di, 2, placements[0]}, hoCell{di, 8, placements[0]}, hoCell{di, 8, placements[1]}, hoCell{di, 8, placements[2]})
	}
	figs := make([][][]hoFig, len(cells)) // [cell][lib][round]
	pings := make([][]time.Duration, len(cells))
	for ci := range cells {
		figs[ci] = make([][]hoFig, len(hoLibs))
	}
	for round := range rounds {
		fmt.Fprintf(w, "\n--- round %d of %d (load average %s) ---\n", round+1, rounds, loadAvg())
		fmt.Fprintf(w, "%-34s %-12s %6s %6s", "cell", "library", "PING", "RTTs")
		for _, c := range hoCols {
			fmt.Fprintf(w, " %7s", c)
		}
		fmt.Fprintln(w)
		for ci, c := range cells {
			undo, err := c.place.apply(pids)
			if err != nil {
				return err
			}
			ping, err := roundTrip(deps[c.dep])
			if err != nil {
				undo()
				return err
			}
			pings[ci] = append(pings[ci], ping)
			name := fmt.Sprintf("%s, %d contenders, %s", depNames[c.dep], c.k, c.place.name)
			for j := range hoLibs {
				li := (j + round) % len(hoLibs) // the order turns round by round
				l := hoLibs[li]
				hc := clients[c.dep][li]
				before, err := commandStats(srv)
				if err == nil {
					err = slowlogReset(admin)
				}
				if err != nil {
					undo()
					return err
				}
				sent := counted(hc.stamps[:c.k])
				cpu0, box0, t0 := readCPU(pids.server[0], pids.proxies), machineBusy(), time.Now()
				pb := startPings(pingers[c.dep])
				hs, n, err := handoverSlice(hc.lockers[:c.k], hc.stamps[:c.k], fmt.Sprintf("ho:%d:%s", c.dep, l.name), slice)
				loaded := pb.p50()
				cpu, box, wall := readCPU(pids.server[0], pids.proxies).sub(cpu0), machineBusy()-box0, us(time.Since(t0))
				if err != nil {
					undo()
					return fmt.Errorf("%s, %s: %w", name, l.name, err)
				}
				after, err := commandStats(srv)
				var slow []slowEntry
				if err == nil {
					slow, err = readSlowlog(admin)
				}
				if err != nil {
					undo()
					return err
				}
				var rel []time.Duration
				for _, e := range slow {
					if e.cmd == "evalsha" && shas[l.name][e.arg] {
						rel = append(rel, time.Duration(e.us)*time.Microsecond)
					}
				}
				sortDurations(rel)
				srvUs, calls := serverCost(before, after)
				f := hoFig{sum: summarize(hs), acqPerS: float64(n) / slice.Seconds(), releaseUs: us(percentile(rel, .5)), srvUs: srvUs / float64(n), srvCalls: calls / float64(n),
					cmds: float64(sent.sub()) / float64(n), cpu: cpu.div(float64(n)), busy: cpu.sum() / wall, box: box / wall, loaded: loaded}
				figs[ci][li] = append(figs[ci][li], f)
				printCols(w, fmt.Sprintf("%-34s %-12s %6.0f %6.2f", name, l.name, us(ping), float64(f.sum.total)/float64(ping)), f.cols())
			}
			undo()
		}
	}

	for _, unit := range []string{"idle", "loaded"} {
		if unit == "idle" {
			fmt.Fprintf(w, "\n=== hand-over p50 in round trips (the idle PING p50 measured before the cell in each round), median over %d rounds [lowest-highest] ===\n", rounds)
		} else {
			fmt.Fprintf(w, "\n=== hand-over p50 in loaded round trips (the p50 of a PING a millisecond during the same slice), median over %d rounds [lowest-highest] ===\n", rounds)
		}
		fmt.Fprintf(w, "%-34s %6s %18s %18s %18s %18s %18s\n", "cell", "PING", "floor-grant", "floor-wake", "redisync", "redisync/grant", "redisync/wake")
		for ci, c := range cells {
			name := fmt.Sprintf("%s, %d contenders, %s", depNames[c.dep], c.k, c.place.name)
			inRTT := make([][]float64, len(hoLibs))
			var ps []float64
			for li := range hoLibs {
				for round, f := range figs[ci][li] {
					rtt := pings[ci][round]
					if unit == "loaded" {
						rtt = f.loaded
					}
					inRTT[li] = append(inRTT[li], float64(f.sum.total)/float64(rtt))
					if unit == "loaded" || li == 0 {
						ps = append(ps, us(rtt))
					}
				}
			}
			ratio := func(a, b []float64) []float64 {
				var out []float64
				for i := range a {
					out = append(out, a[i]/b[i])
				}
				return out
			}
			fmt.Fprintf(w, "%-34s %6.0f %18s %18s %18s %18s %18s\n", name, median(ps), spread(inRTT[0]), spread(inRTT[1]), spread(inRTT[2]),
				spread(ratio(inRTT[2], inRTT[0])), spread(ratio(inRTT[2], inRTT[1])))
		}
	}
	fmt.Fprintf(w, "\nparts of the hand-over, median over %d rounds of each slice's figure (us unless named; see README)\n", rounds)
	fmt.Fprintf(w, "%-34s %-12s", "cell", "library")
	for _, c := range hoCols {
		fmt.Fprintf(w, " %7s", c)
	}
	fmt.Fprintln(w)
	for ci, c := range cells {
		name := fmt.Sprintf("%s, %d contenders, %s", depNames[c.dep], c.k, c.place.name)
		for li, l := range hoLibs {
			each := make([][]float64, len(hoCols))
			for _, f := range figs[ci][li] {
				for i, v := range f.cols() {
					each[i] = append(each[i], v)
				}
			}
			var meds []float64
			for _, xs := range each {
				meds = append(meds, median(xs))
			}
			printCols(w, fmt.Sprintf("%-34s %-12s", name, l.name), meds)
		}
	}

	// B14's bursts, the deployments and libraries interleaved, each idle for the whole spell before
	// each of its bursts.
	fmt.Fprintf(w, "\n=== B14's burst: 8 clients lock one key 10 times each, at once, after %v alone; longest gap ===\n", idle)
	brtt := make([]time.Duration, len(deps))
	for di, d := range deps {
		if brtt[di], err = roundTrip(d); err != nil {
			return err
		}
	}
	type bkey struct{ dep, lib int }
	gaps := map[bkey][]time.Duration{}
	last := map[bkey]time.Time{}
	for b := -1; b < bursts; b++ { // burst -1 warms up
		for di := range deps {
			for li, l := range hoLibs {
				k := bkey{di, li}
				if at, ok := last[k]; ok {
					time.Sleep(time.Until(at.Add(idle)))
				}
				gap, _, _, err := burst(clients[di][li].lockers, fmt.Sprintf("ho:b14:%d:%s", di, l.name), 10)
				last[k] = time.Now()
				if err != nil {
					return fmt.Errorf("burst %s %s: %w", depNames[di], l.name, err)
				}
				if b >= 0 {
					gaps[k] = append(gaps[k], gap)
				}
			}
		}
	}
	for di := range deps {
		fmt.Fprintf(w, "%s (PING p50 %.0f us):\n", depNames[di], us(brtt[di]))
		for li, l := range hoLibs {
			var each []string
			longest := time.Duration(0)
			for _, g := range gaps[bkey{di, li}] {
				each = append(each, fmt.Sprintf("%.1f", float64(g)/float64(brtt[di])))
				longest = max(longest, g)
			}
			fmt.Fprintf(w, "  %-12s longest %6.2f ms = %5.1f RTT; each burst's, in RTT: %s\n", l.name, us(longest)/1000, float64(longest)/float64(brtt[di]), strings.Join(each, ", "))
		}
	}
	fmt.Fprintf(w, "\nload average at the end: %s; wall time %v\n", loadAvg(), time.Since(began).Round(time.Second))
	return nil
}

// median of xs (NaN of none), leaving xs unsorted.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread prints xs as "median [lowest-highest]".
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f [%.2f-%.2f]", median(xs), slices.Min(xs), slices.Max(xs))
}
