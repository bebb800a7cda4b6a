package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
)

const inspectHeader = `Usage: redisync inspect [--json] [--watch [--interval D]] NAME

Shows what Redis holds under NAME, read without changing anything (only TYPE, HGETALL, GET, PTTL,
LRANGE, ZRANGE, EXISTS, TIME, PUBSUB NUMSUB and, for other keys, their length are sent): which primitive it is, its holders and
their hold counts, its TTL, the fair lock's queue with each waiter's deadline, the read-write lock's
mode and per-reader leases, a semaphore's available permits and the expiry of each acquired permit,
a latch's count, a rate limiter's rate and permits left. It reads Redisson's layout, so it shows
locks taken by Java services too.

Owners read "<client id>:<owner id>": the client id is a redisync Client's (or a Redisson
instance's) UUID, the owner id its context owner (Redisson: the thread id).

Some states look alike in Redis: a fair lock with nobody in line looks like a lock, and a semaphore
and a countdown latch are both a number under NAME. When nobody waits on the number, inspect cannot
tell which it is and says so.
`

const inspectFooter = `
Keys under NAME that are no primitive's are shown by type and size only, never by content. Names,
owners and ids are printed with control characters escaped. Holders that are this tool show the
host, pid and command that registered beside the owner (key redisync_holder:{NAME}).

Exit status: 0 (also when nothing is stored under NAME), 1 when NAME holds something that is not a
redisync or Redisson object, 77 when Redis refuses a command (NOPERM), 69 when Redis is unreachable
or failing.

Examples:
  redisync inspect nightly-report
  redisync inspect --json --addr 10.0.0.1:7000,10.0.0.2:7000 orders | jq .holders
`

// state is what inspect reports. Times are in milliseconds; deadlines and expiries are relative to
// the server's clock at the time of reading ("in_ms": how long from now; negative: in the past).
type state struct {
	Name string `json:"name"`
	// Kind: "none", "lock", "fair lock", "read-write lock", "semaphore", "permit-expirable semaphore",
	// "countdown latch", or "semaphore or countdown latch" when nothing tells the two apart.
	Kind string `json:"kind"`
	// TTLms: the main key's remaining time to live; -1 without expiry; absent when the key is missing.
	TTLms        *int64        `json:"ttl_ms,omitempty"`
	Mode         string        `json:"mode,omitempty"` // read-write lock: "read" or "write"
	Holders      []holderState `json:"holders,omitempty"`
	Queue        []waiter      `json:"queue,omitempty"`         // fair lock, head first
	FencingToken *int64        `json:"fencing_token,omitempty"` // the last token issued
	// Available: the semaphore's available permits (expired permits not yet returned included).
	Available *int64   `json:"available,omitempty"`
	Permits   []permit `json:"permits,omitempty"` // the permit-expirable semaphore's acquired permits
	Count     *int64   `json:"count,omitempty"`   // the latch's count
	// WaitingWriters: the writers a read-write lock with writer preference keeps new readers out for,
	// each with the time its announcement lapses unless renewed.
	WaitingWriters []waiter `json:"waiting_writers,omitempty"`
	Keys           []string `json:"keys"` // the keys that were found

	RateLimiter *rateState `json:"rate_limiter,omitempty"` // a rate limiter's rate and window
	// Other: NAME holds a key that is no primitive's (Kind "other"): its type and size only.
	Other *other `json:"other,omitempty"`
}

type holderState struct {
	Owner  string      `json:"owner"`
	Who    *holderInfo `json:"who,omitempty"` // the redisync process that holds, as it registered
	Count  int64       `json:"count"`
	Write  bool        `json:"write,omitempty"`     // read-write lock: the writer
	Leases []int64     `json:"leases_ms,omitempty"` // read-write lock: each read hold's remaining lease
}

type waiter struct {
	Owner    string `json:"owner"`
	Deadline *int64 `json:"deadline_in_ms,omitempty"` // by when it must try again or lose its place
}

type permit struct {
	ID      string      `json:"id"`
	Who     *holderInfo `json:"who,omitempty"`
	Never   bool        `json:"never_expires,omitempty"`
	Expires int64       `json:"expires_in_ms,omitempty"`
}

// neverExpires is the score of a permit without lease (Redisson's value).
const neverExpires = 922337203685477

// cmdInspect shows what Redis holds under a name.
func cmdInspect(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("inspect", inspectHeader, inspectFooter, stdout, stderr)
	asJSON := cmd.fs.Bool("json", false, "print JSON (times in milliseconds, relative to the server's clock)")
	watching := cmd.fs.Bool("watch", false, "read again every --interval until interrupted, printing the view with the time whenever holders, queue, counts or the fencing token change (one JSON object a line with --json)")
	interval := durationFlag(cmd.fs, "interval", time.Second, "how often --watch reads")
	var conn connFlags
	conn.register(cmd.fs)
	pos, _, _, code := cmd.parse(args, 0)
	if code >= 0 {
		return code
	}
	switch {
	case len(pos) == 0:
		return cmd.usageError("missing NAME")
	case len(pos) > 1:
		return cmd.usageError("unexpected argument %q", pos[1])
	case pos[0] == "":
		return cmd.usageError("empty NAME")
	}
	rdb, code := conn.rawClient(cmd)
	if code >= 0 {
		return code
	}
	defer rdb.Close()
	if *watching {
		return watchInspect(rdb, conn.objectKey(pos[0]), *asJSON, max(*interval, 10*time.Millisecond), stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := inspect(ctx, rdb, conn.objectKey(pos[0]))
	if err != nil {
		return redisError(cmd, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(st)
	} else {
		st.print(stdout)
	}
	if st.Other != nil {
		return exitFailure
	}
	return exitOK
}

// other describes a key that is no primitive's: its type and size, never its content, which may
// be anyone's secret.
type other struct {
	Type string `json:"type"`
	Size int64  `json:"size"` // bytes of a string, elements of anything else
}

func (o other) String() string {
	unit := "elements"
	if o.Type == "string" {
		unit = "bytes"
	}
	return fmt.Sprintf("a %s of %d %s, not a lock, semaphore or latch", o.Type, o.Size, unit)
}

// sizeCommand is the command that measures a key of each type.
func sizeCommand(rdb rueidis.Client, typ, key string) (rueidis.Completed, bool) {
	b := rdb.B()
	switch typ {
	case "string":
		return b.Strlen().Key(key).Build(), true
	case "hash":
		return b.Hlen().Key(key).Build(), true
	case "list":
		return b.Llen().Key(key).Build(), true
	case "set":
		return b.Scard().Key(key).Build(), true
	case "zset":
		return b.Zcard().Key(key).Build(), true
	case "stream":
		return b.Xlen().Key(key).Build(), true
	}
	return rueidis.Completed{}, false
}

// foreign fills st for a key that is no primitive's.
func (r *reader) foreign(st *state, typ string) {
	st.Kind = "other"
	o := &other{Type: typ, Size: -1}
	if cmd, ok := sizeCommand(r.rdb, typ, st.Name); ok {
		o.Size, _ = r.do(cmd).AsInt64()
	}
	st.Other = o
	st.Holders, st.Count, st.Available, st.Mode = nil, nil, nil, ""
}

// reader sends read-only commands and remembers the first error.
type reader struct {
	ctx   context.Context
	rdb   rueidis.Client
	names core.Names
	err   error
}

func newReader(ctx context.Context, rdb rueidis.Client) *reader {
	return &reader{ctx: ctx, rdb: rdb, names: core.Names{Cluster: rdb.Mode() == rueidis.ClientModeCluster}}
}

func (r *reader) do(cmd rueidis.Completed) rueidis.RedisResult {
	res := r.rdb.Do(r.ctx, cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) && r.err == nil {
		r.err = err
	}
	return res
}

func (r *reader) exists(key string) bool {
	n, _ := r.do(r.rdb.B().Exists().Key(key).Build()).AsInt64()
	return n == 1
}

func (r *reader) pttl(key string) int64 {
	n, _ := r.do(r.rdb.B().Pttl().Key(key).Build()).AsInt64()
	return n
}

func (r *reader) int(key string) (int64, bool) {
	s, err := r.do(r.rdb.B().Get().Key(key).Build()).ToString()
	if err != nil {
		return 0, false
	}
	// Never the value in a message: a string that is not a number is someone else's.
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// zset returns the members of a sorted set with their scores, lowest first.
func (r *reader) zset(key string) []rueidis.ZScore {
	z, _ := r.do(r.rdb.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
	return z
}

// now returns the server's clock in milliseconds: deadlines and expiries in Redis are by it.
func (r *reader) now() int64 {
	t, err := r.do(r.rdb.B().Time().Build()).AsStrSlice()
	if err != nil || len(t) != 2 {
		return time.Now().UnixMilli()
	}
	s, _ := strconv.ParseInt(t[0], 10, 64)
	us, _ := strconv.ParseInt(t[1], 10, 64)
	return s*1000 + us/1000
}

// subscribers counts the subscribers of a channel on every node (classic and sharded Pub/Sub).
func (r *reader) subscribers(channel string) int64 {
	var n int64
	for _, node := range r.rdb.Nodes() {
		for _, cmd := range []rueidis.Completed{
			node.B().PubsubNumsub().Channel(channel).Build(),
			node.B().PubsubShardnumsub().Channel(channel).Build(),
		} {
			// SHARDNUMSUB is missing before Redis 7: not an error for inspect.
			if m, err := node.Do(r.ctx, cmd).AsMap(); err == nil {
				c := m[channel]
				v, _ := c.AsInt64()
				n += v
			}
		}
	}
	return n
}

func (r *reader) found(st *state, key string, ok bool) bool {
	if ok {
		st.Keys = append(st.Keys, key)
	}
	return ok
}

// inspect reads the layout of every primitive that may live under name.
func inspect(ctx context.Context, rdb rueidis.Client, name string) (*state, error) {
	r := newReader(ctx, rdb)
	st := &state{Name: name, Kind: "none", Keys: []string{}}
	typ, err := r.do(rdb.B().Type().Key(name).Build()).ToString()
	if err != nil {
		return nil, err
	}
	now := r.now()
	if typ != "none" {
		st.Keys = append(st.Keys, name)
		ttl := r.pttl(name)
		st.TTLms = &ttl
	}
	switch typ {
	case "hash", "none":
		if typ == "hash" && r.rateLimiter(st, now) {
			break
		}
		if typ == "hash" && !r.isLock(name) {
			r.foreign(st, typ)
			break
		}
		r.lock(st, typ == "hash", now)
	case "string":
		if _, ok := r.int(name); !ok {
			r.foreign(st, typ)
			break
		}
		r.counter(st, now)
	default:
		r.foreign(st, typ)
	}
	if r.err != nil {
		return nil, r.err
	}
	who := whois(ctx, rdb, r.names.Prefixed(whoisPrefix, name))
	for i, h := range st.Holders {
		if info, ok := who[h.Owner]; ok {
			st.Holders[i].Who = &info
		}
	}
	for i, p := range st.Permits {
		if info, ok := who[p.ID]; ok {
			st.Permits[i].Who = &info
		}
	}
	return st, nil
}

// isLock reports whether the hash name has a lock's layout: owner fields with hold counts, and a
// read-write lock's "mode". Anything else is someone else's hash.
func (r *reader) isLock(name string) bool {
	// HSCAN would read values too; HGETALL reads them only to check their form, never to show them.
	fields, err := r.do(r.rdb.B().Hgetall().Key(name).Build()).AsStrMap()
	if err != nil {
		return false
	}
	for k, v := range fields {
		if k == "mode" {
			if v != "read" && v != "write" {
				return false
			}
			continue
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil || !strings.Contains(k, ":") {
			return false
		}
	}
	return true
}

// lock reads a lock, fair lock or read-write lock (or finds nothing at all).
func (r *reader) lock(st *state, held bool, now int64) {
	name := st.Name
	var fields map[string]string
	if held {
		fields, _ = r.do(r.rdb.B().Hgetall().Key(name).Build()).AsStrMap()
	}
	queueKey := r.names.Prefixed("redisson_lock_queue", name)
	timeoutKey := r.names.Prefixed("redisson_lock_timeout", name)
	tokenKey := r.names.Prefixed("redisson_lock_token", name)
	fair := r.found(st, queueKey, r.exists(queueKey))
	fair = r.found(st, timeoutKey, r.exists(timeoutKey)) || fair
	if token, ok := r.int(tokenKey); r.found(st, tokenKey, ok) {
		st.FencingToken = &token
	}

	if mode, ok := fields["mode"]; ok {
		st.Kind, st.Mode = "read-write lock", mode
		delete(fields, "mode")
		writersKey := r.names.Prefixed("redisync_rwlock_writers", name)
		for _, z := range r.zset(writersKey) {
			if in := int64(z.Score) - now; in > 0 { // lapsed ones are ignored, and dropped by the next reader
				st.WaitingWriters = append(st.WaitingWriters, waiter{Owner: strings.TrimSuffix(z.Member, ":write"), Deadline: &in})
			}
		}
		r.found(st, writersKey, len(st.WaitingWriters) > 0)
		for _, owner := range sortedKeys(fields) {
			count, _ := strconv.ParseInt(fields[owner], 10, 64)
			h := holderState{Owner: owner, Count: count}
			if o, ok := strings.CutSuffix(owner, ":write"); ok {
				h.Owner, h.Write = o, true
			} else {
				for k := int64(1); k <= count; k++ {
					h.Leases = append(h.Leases, r.pttl(r.names.Suffixed(name, owner+":rwlock_timeout:"+strconv.FormatInt(k, 10))))
				}
			}
			st.Holders = append(st.Holders, h)
		}
		return
	}
	for _, owner := range sortedKeys(fields) {
		count, _ := strconv.ParseInt(fields[owner], 10, 64)
		st.Holders = append(st.Holders, holderState{Owner: owner, Count: count})
	}
	switch {
	case fair:
		st.Kind = "fair lock"
		queue, _ := r.do(r.rdb.B().Lrange().Key(queueKey).Start(0).Stop(-1).Build()).AsStrSlice()
		deadlines := make(map[string]int64)
		for _, z := range r.zset(timeoutKey) {
			deadlines[z.Member] = int64(z.Score)
		}
		for _, owner := range queue {
			w := waiter{Owner: owner}
			if d, ok := deadlines[owner]; ok {
				in := d - now
				w.Deadline = &in
			}
			st.Queue = append(st.Queue, w)
		}
	case held || st.FencingToken != nil:
		st.Kind = "lock"
	default:
		r.expirable(st, now)
	}
}

// counter reads a semaphore or a latch: a number under the name.
func (r *reader) counter(st *state, now int64) {
	n, ok := r.int(st.Name)
	if !ok {
		return
	}
	if r.expirable(st, now) {
		return
	}
	sem := r.subscribers(r.names.Prefixed("redisson_sc", st.Name)) > 0
	latch := r.subscribers(r.names.Braced("redisson_countdownlatch__channel__", st.Name, "redisson_countdownlatch__channel_")) > 0
	switch {
	case sem && !latch:
		st.Kind, st.Available = "semaphore", &n
	case latch && !sem:
		st.Kind, st.Count = "countdown latch", &n
	default:
		st.Kind, st.Available, st.Count = "semaphore or countdown latch", &n, &n
	}
}

// expirable reads the permits of a permit-expirable semaphore; it reports whether there are any.
func (r *reader) expirable(st *state, now int64) bool {
	key := r.names.Suffixed(st.Name, "timeout")
	zs := r.zset(key)
	if !r.found(st, key, len(zs) > 0) {
		return false
	}
	st.Kind = "permit-expirable semaphore"
	available, _ := r.int(st.Name) // a missing count is 0
	for _, z := range zs {
		p := permit{ID: printable(z.Member)}
		if int64(z.Score) >= neverExpires {
			p.Never = true
		} else {
			p.Expires = int64(z.Score) - now
			if p.Expires <= 0 {
				available++ // back in the pool at the next operation, whoever sends it
			}
		}
		st.Permits = append(st.Permits, p)
	}
	st.Available = &available
	return true
}

func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' }) {
		return s
	}
	return hex.EncodeToString([]byte(s))
}

// escape makes s safe for a terminal: control characters (escape sequences, newlines that would
// forge lines) and invalid UTF-8 are written as Go escapes.
func escape(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) && r != ' ' }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// print writes st for people.
func (st *state) print(w io.Writer) {
	fmt.Fprintf(w, "%s: %s", escape(st.Name), st.Kind)
	switch {
	case st.Other != nil:
		fmt.Fprintf(w, ": %s\n", st.Other)
		return
	case st.Kind == "none":
		fmt.Fprintln(w, " (nothing stored: a free lock, an empty semaphore or an open latch)")
		return
	case st.Mode != "":
		fmt.Fprintf(w, ", held for %s", st.Mode)
	case len(st.Holders) > 0:
		fmt.Fprint(w, ", held")
	case strings.HasSuffix(st.Kind, "lock"):
		fmt.Fprint(w, ", free")
	}
	if st.TTLms != nil {
		fmt.Fprintf(w, ", %s", expiry(*st.TTLms))
	}
	fmt.Fprintln(w)
	st.RateLimiter.print(w)
	for _, h := range st.Holders {
		role := "holder"
		if st.Mode != "" {
			role = "reader"
			if h.Write {
				role = "writer"
			}
		}
		fmt.Fprintf(w, "  %s %s  count %d", role, escape(h.Owner), h.Count)
		if len(h.Leases) > 0 {
			leases := make([]string, len(h.Leases))
			for i, ms := range h.Leases {
				leases[i] = ttlString(ms)
			}
			fmt.Fprintf(w, "  leases %s", strings.Join(leases, ", "))
		}
		if h.Who != nil {
			fmt.Fprintf(w, "  %s", escape(h.Who.String()))
		}
		fmt.Fprintln(w)
	}
	if len(st.WaitingWriters) > 0 {
		fmt.Fprintf(w, "  writers waiting, keeping new readers out: %d\n", len(st.WaitingWriters))
		for _, q := range st.WaitingWriters {
			fmt.Fprintf(w, "    %s  announced for %v more\n", escape(q.Owner), ms(*q.Deadline))
		}
	}
	if st.Kind == "fair lock" {
		fmt.Fprintf(w, "  queue: %d waiting\n", len(st.Queue))
		for i, q := range st.Queue {
			fmt.Fprintf(w, "    %d. %s", i+1, escape(q.Owner))
			switch {
			case q.Deadline == nil:
				fmt.Fprint(w, "  no deadline")
			case *q.Deadline < 0:
				fmt.Fprintf(w, "  deadline passed %v ago: loses its place at the next try", ms(-*q.Deadline))
			default:
				fmt.Fprintf(w, "  must try again within %v", ms(*q.Deadline))
			}
			fmt.Fprintln(w)
		}
	}
	if st.FencingToken != nil {
		fmt.Fprintf(w, "  last fencing token: %d\n", *st.FencingToken)
	}
	switch st.Kind {
	case "semaphore", "permit-expirable semaphore":
		fmt.Fprintf(w, "  available permits: %d\n", *st.Available)
	case "countdown latch":
		fmt.Fprintf(w, "  count: %d\n", *st.Count)
	case "semaphore or countdown latch":
		fmt.Fprintf(w, "  value %d: a semaphore's available permits, or a latch's count\n", *st.Count)
	}
	if st.Kind == "permit-expirable semaphore" {
		fmt.Fprintf(w, "  acquired permits: %d\n", len(st.Permits))
		for _, p := range st.Permits {
			switch {
			case p.Never:
				fmt.Fprintf(w, "    %s  never expires", p.ID)
			case p.Expires <= 0:
				fmt.Fprintf(w, "    %s  expired %v ago: back in the pool at the next operation", p.ID, ms(-p.Expires))
			default:
				fmt.Fprintf(w, "    %s  expires in %v", p.ID, ms(p.Expires))
			}
			if p.Who != nil {
				fmt.Fprintf(w, "  %s", escape(p.Who.String()))
			}
			fmt.Fprintln(w)
		}
	}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// expiry describes a key's PTTL.
func expiry(pttl int64) string {
	if pttl < 0 {
		return "no expiry"
	}
	return "expires in " + ms(pttl).String()
}

// ttlString describes a lease key's PTTL, which may be missing (-2).
func ttlString(pttl int64) string {
	switch pttl {
	case -2:
		return "gone"
	case -1:
		return "no expiry"
	}
	return ms(pttl).String()
}
