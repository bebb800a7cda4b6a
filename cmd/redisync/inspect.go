package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/layout"
)

const inspectHeader = `Usage: redisync inspect [--json] [--watch [--interval D]] NAME

Shows what Redis holds under NAME, read without changing anything: which primitive it is, its
holders and their hold counts, its TTL, its waiters (a lock's and a semaphore's recorded waiters,
the fair lock's queue with each waiter's deadline, the read-write lock's waiting writers, the
processes waiting on a semaphore's, latch's or group lock's channel), the read-write lock's mode and
per-reader leases, a group lock's values by holder, a semaphore's available permits and the expiry
of each acquired permit, a latch's count, a rate limiter's rate and permits left. It reads
Redisson's layout, so it shows locks taken by Java services too.

Only live waiters are shown: the records a waiter leaves beside a lock or semaphore also hold what
is no waiter (the mark of a hand-over to the waiter that now holds, a record whose waiter has gone,
the turn kept for Java waiters), and those are left out. A holder is never shown as a waiter.

It costs the server little whatever NAME holds: a few round trips of pipelined, bounded reads
(TYPE, PTTL, TIME, HLEN, HSCAN, HMGET, GETRANGE, LLEN, LRANGE, ZCARD, ZCOUNT, ZRANGE,
ZRANGEBYSCORE, ZSCORE, PUBSUB NUMSUB, and for other keys their length), never a whole value: of
long lists, at most 100 entries are read, and the rest counted.

Owners read "<client id>:<owner id>": the client id is a redisync Client's (or a Redisson
instance's) UUID, the owner id its context owner (Redisson: the thread id). A semaphore's waiter
reads "<client id>:<attempt>". A group lock's values read as their fields in the group's hash,
Redisson's hash of each value (multilock.GroupField).

Durations are relative to the server's clock. They are never negative but for a fair lock's queue,
where a waiter past its deadline keeps its place until the next try drops it, and a permit that
expired and is not yet back in the pool.

Some states look alike in Redis: a fair lock with nobody in line looks like a lock, and a semaphore
and a countdown latch are both a number under NAME. When nobody waits on the number, inspect cannot
tell which it is and says so.
`

const inspectFooter = `
Keys under NAME that are no primitive's are shown by type and size only, never by content. Names,
owners and ids are printed with control characters escaped. Holders that are this tool show the
host, pid and command that registered beside the owner (key redisync_holder:{NAME}).

--watch reads again every --interval, of at least 100ms: a shorter one is refused (status 64).

Exit status: 0 (also when nothing is stored under NAME), 65 when NAME holds something that is not a
redisync or Redisson object, 64 for bad flags or arguments, 69 when Redis is unreachable or failing,
77 when Redis refuses (NOPERM, wrong user or password).

Examples:
  redisync inspect nightly-report
  redisync inspect --json --addr 10.0.0.1:7000,10.0.0.2:7000 orders | jq .holders
`

// state is what inspect reports. Times are in milliseconds; deadlines and expiries are relative to
// the server's clock at the time of reading ("in_ms": how long from now; negative: in the past).
type state struct {
	Name string `json:"name"`
	// Kind: "none", "lock", "fair lock", "read-write lock", "group lock", "semaphore",
	// "permit-expirable semaphore", "countdown latch", "rate limiter", "other" (no primitive's), or
	// "semaphore or countdown latch" when nothing tells the two apart.
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
	// Waiters: the waiters that recorded themselves (a lock's, a semaphore's: redisync's), each with
	// the time by which it will have tried again. Records that are no waiter are left out: a grant's
	// mark (the holder a release handed the lock to), a record whose time has passed (its waiter has
	// gone), the Java waiters' turns (see records.go).
	Waiters []waiter `json:"waiters,omitempty"`
	// Subscribers: the subscribers of a semaphore's, latch's or group lock's channel, on every node:
	// the processes waiting for it (a redisync Client subscribes once for all its waiters).
	Subscribers *int64   `json:"subscribers,omitempty"`
	Keys        []string `json:"keys"` // the keys that were found
	// Omitted: how many holders, queue, waiters, waiting_writers or permits there are beyond those
	// shown (at most 100 of each are read), and about how many values of a group lock were not read.
	Omitted map[string]int64 `json:"omitted,omitempty"`

	RateLimiter *rateState `json:"rate_limiter,omitempty"` // a rate limiter's rate and window
	// Other: NAME holds a key that is no primitive's (Kind "other"): its type and size only.
	Other *other `json:"other,omitempty"`
}

type holderState struct {
	Owner string      `json:"owner"`
	Who   *holderInfo `json:"who,omitempty"` // the redisync process that holds, as it registered
	// Count: the hold count (a group lock: the highest of its values').
	Count  int64        `json:"count"`
	Write  bool         `json:"write,omitempty"`     // read-write lock: the writer
	Leases []int64      `json:"leases_ms,omitempty"` // read-write lock: each read hold's remaining lease
	Values []groupValue `json:"values,omitempty"`    // group lock: the values it holds
}

// groupValue is one value of a group lock that its holder holds.
type groupValue struct {
	Field     string `json:"field"` // the value's field: Redisson's hash of the value (multilock.GroupField)
	Count     int64  `json:"count"`
	ExpiresMs int64  `json:"expires_in_ms"`
}

type waiter struct {
	// Owner: the waiting owner; a semaphore's waiter is "<client id>:<attempt>".
	Owner string `json:"owner"`
	// Deadline: by when it must try again or lose its place (a fair lock's queue: negative once
	// passed, until the next try drops it), will have tried again (a recorded waiter), or stops
	// keeping readers out unless renewed (a waiting writer).
	Deadline *int64 `json:"deadline_in_ms,omitempty"`
	Permits  int64  `json:"permits,omitempty"` // a semaphore's waiter: the permits it wants
}

type permit struct {
	ID      string      `json:"id"`
	Who     *holderInfo `json:"who,omitempty"`
	Never   bool        `json:"never_expires,omitempty"`
	Expires int64       `json:"expires_in_ms,omitempty"`
}

// cmdInspect shows what Redis holds under a name.
func cmdInspect(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("inspect", inspectHeader, inspectFooter, stdout, stderr)
	asJSON := cmd.fs.Bool("json", false, "print JSON (times in milliseconds, relative to the server's clock)")
	watching := cmd.fs.Bool("watch", false, "read again every --interval until interrupted, printing the view with the time whenever holders, waiters,\nqueue, counts or the fencing token change, not when times only count down (one JSON object a line with --json)")
	interval := durationFlag(cmd.fs, "interval", time.Second, "how often --watch reads, at least "+minInterval.String())
	var conn connFlags
	conn.register(cmd.fs)
	name, code := cmd.parseName(args)
	if code >= 0 {
		return code
	}
	if *interval < minInterval {
		return cmd.usageError("--interval %v is too short: at least %v (each read costs the server a few round trips)", *interval, minInterval)
	}
	rdb, code := conn.rawClient(cmd, -1)
	if code >= 0 {
		return code
	}
	defer rdb.Close()
	if *watching {
		return watchInspect(cmd, rdb, conn.objectKey(name), *asJSON, *interval)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := inspect(ctx, rdb, conn.objectKey(name))
	if err != nil {
		return redisError(cmd, err)
	}
	if *asJSON {
		printJSON(stdout, st)
	} else {
		st.print(stdout)
	}
	if st.Other != nil {
		return exitDataErr
	}
	return exitOK
}

// minInterval is the shortest --interval of --watch: a watch must not become a load on the server.
const minInterval = 100 * time.Millisecond

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

// sizeCommand is the O(1) command that measures a key of each type.
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

// foreign fills st for a key that is no primitive's; size < 0: not measured yet.
func (r *reader) foreign(st *state, typ string, size int64) {
	*st = state{Name: st.Name, Kind: "other", TTLms: st.TTLms, Keys: []string{st.Name}}
	o := &other{Type: typ, Size: size}
	if cmd, ok := sizeCommand(r.rdb, typ, st.Name); ok && size < 0 {
		o.Size, _ = r.multi(cmd)[0].AsInt64()
	}
	st.Other = o
}

// omit notes that n items of what (a list of st's) are not shown.
func (st *state) omit(what string, n int64) {
	if n <= 0 {
		return
	}
	if st.Omitted == nil {
		st.Omitted = make(map[string]int64)
	}
	st.Omitted[what] = n
}

// inspect reads the layout of every primitive that may live under name, in a few round trips of
// bounded commands (see reader).
func inspect(ctx context.Context, rdb rueidis.Client, name string) (*state, error) {
	r := newReader(ctx, rdb)
	st := &state{Name: name, Kind: "none", Keys: []string{}}
	b := rdb.B()
	res := r.multi(b.Type().Key(name).Build(), b.Pttl().Key(name).Build(), b.Time().Build())
	if r.err != nil {
		return nil, r.err
	}
	typ, _ := res[0].ToString()
	r.nowUs = serverMicros(res[2])
	now := r.nowUs / 1000
	if typ != "none" {
		st.Keys = append(st.Keys, name)
		ttl, _ := res[1].AsInt64()
		st.TTLms = &ttl
	}
	switch typ {
	case "hash":
		r.hash(st, now)
	case "none":
		r.lock(st, nil, now) // a free lock, a fair lock's queue, a permit-expirable semaphore's permits
	case "string":
		r.counter(st, now)
	default:
		r.foreign(st, typ, -1)
	}
	if r.err != nil {
		return nil, r.err
	}
	r.who(st)
	if r.err != nil {
		return nil, r.err
	}
	return st, nil
}

// who adds the holders' registrations (see register) to st.
func (r *reader) who(st *state) {
	var fields []string
	for _, h := range st.Holders {
		fields = append(fields, h.Owner)
	}
	for _, p := range st.Permits {
		fields = append(fields, p.ID)
	}
	if len(fields) == 0 {
		return
	}
	who := whois(r, r.names.Prefixed(whoisPrefix, st.Name), fields)
	for i, h := range st.Holders {
		st.Holders[i].Who = who[h.Owner]
	}
	for i, p := range st.Permits {
		st.Permits[i].Who = who[p.ID]
	}
}

// hash reads a hash: a rate limiter, a lock, read-write lock or group lock, or someone else's hash.
// Only as many fields are read as such a hash has: someone else's hash shows as such from its first
// page.
func (r *reader) hash(st *state, now int64) {
	b := r.rdb.B()
	res := r.multi(b.Hlen().Key(st.Name).Build(), b.Hscan().Key(st.Name).Cursor(0).Count(hashPage).Build())
	size, _ := res[0].AsInt64()
	page, err := res[1].AsScanEntry()
	if err != nil {
		return
	}
	fields := pairs(page.Elements)
	if r.rateLimiter(st, fields, now) {
		return
	}
	ours := func() bool { return lockFields(fields) || groupFields(fields) }
	for pages := 1; ours() && page.Cursor != 0 && pages < maxHashScan; pages++ {
		page, err = r.multi(b.Hscan().Key(st.Name).Cursor(page.Cursor).Count(hashPage).Build())[0].AsScanEntry()
		if err != nil {
			return
		}
		for k, v := range pairs(page.Elements) {
			fields[k] = v
		}
	}
	switch {
	case groupFields(fields):
		r.group(st, fields, size, now)
	case lockFields(fields):
		if page.Cursor != 0 {
			st.omit("holders", size-int64(len(fields)))
		}
		r.lock(st, fields, now)
	default:
		r.foreign(st, "hash", size)
	}
}

// pairs turns HSCAN's field, value, field, value... into a map.
func pairs(elements []string) map[string]string {
	m := make(map[string]string, len(elements)/2)
	for i := 0; i+1 < len(elements); i += 2 {
		m[elements[i]] = elements[i+1]
	}
	return m
}

// lockFields reports whether fields have a lock's layout: owner fields with hold counts, and a
// read-write lock's "mode". Anything else is someone else's hash.
func lockFields(fields map[string]string) bool {
	for k, v := range fields {
		if k == layout.RWLock.Mode {
			if !rwMode(v) {
				return false
			}
			continue
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil || !strings.Contains(k, ":") ||
			strings.HasSuffix(k, layout.Group.Expire) || strings.HasSuffix(k, layout.Group.Count) {
			return false
		}
	}
	return true
}

// lock reads a lock, fair lock or read-write lock whose hash holds fields (nil: no hash), or finds
// nothing at all, or a permit-expirable semaphore's permits without a count.
func (r *reader) lock(st *state, fields map[string]string, now int64) {
	name := st.Name
	if mode, ok := fields[layout.RWLock.Mode]; ok {
		st.Kind, st.Mode = "read-write lock", mode
		delete(fields, layout.RWLock.Mode)
		r.rwlock(st, fields, now)
		return
	}
	rdb := r.rdb
	queueKey := r.key(layout.FairLock.Queue, name)
	timeoutKey := r.key(layout.FairLock.Deadlines, name)
	tokenKey := r.key(layout.Lock.Counter, name)
	waitersKey := r.key(layout.Lock.Waiters, name)
	owners := sortedKeys(fields)
	var q batch
	queueLen := q.add(rdb.B().Llen().Key(queueKey).Build())
	queue := q.add(rdb.B().Lrange().Key(queueKey).Start(0).Stop(maxShown - 1).Build())
	timeouts := q.add(rdb.B().Zcard().Key(timeoutKey).Build())
	token := q.add(getNumber(rdb, tokenKey))
	waiters := q.add(rdb.B().Zcount().Key(waitersKey).Min(liveFrom(r.nowUs)).Max("+inf").Build())
	records := q.add(liveRecords(rdb, waitersKey, r.nowUs))
	marks := -1
	if len(owners) > 0 {
		// A fair lock handed over to a waiter has no queue left, but its holder's grant mark.
		marks = q.add(rdb.B().Hmget().Key(r.key(layout.FairLock.Records, name)).Field(owners...).Build())
	}
	exp := -1
	if fields == nil {
		exp = r.addExpirable(&q, name, now)
	}
	q.send(r)
	holders := make(map[string]bool, len(owners))
	for _, owner := range owners {
		count, _ := strconv.ParseInt(fields[owner], 10, 64)
		st.Holders = append(st.Holders, holderState{Owner: owner, Count: count})
		holders[owner] = true
	}
	if n, ok := number(q.str(token)); r.found(st, tokenKey, ok) {
		st.FencingToken = &n
	}
	r.waiters(st, waitersKey, q.int(waiters), q.zset(records), func(m string) (waiter, bool) {
		owner := recordOwner(m)
		return waiter{Owner: owner}, !turnMarker(m) && !holders[owner]
	})
	fair := r.found(st, queueKey, q.int(queueLen) > 0)
	fair = r.found(st, timeoutKey, q.int(timeouts) > 0) || fair
	if marks >= 0 && !fair {
		recs, _ := q.res[marks].AsStrSlice()
		fair = slices.ContainsFunc(recs, fairGrant)
	}
	switch {
	case fair:
		st.Kind = "fair lock"
		inLine, _ := q.res[queue].AsStrSlice()
		st.omit("queue", q.int(queueLen)-int64(len(inLine)))
		r.queue(st, timeoutKey, inLine, holders, now)
	case fields != nil || st.FencingToken != nil || len(st.Waiters) > 0:
		st.Kind = "lock"
	case exp >= 0:
		r.expirable(st, &q, exp, 0, now)
	}
}

// queue adds to st the waiters of a fair lock among inLine, the first of its queue, each with its
// deadline from timeoutKey. A holder is in line only for a moment, and waits for nobody.
func (r *reader) queue(st *state, timeoutKey string, inLine []string, holders map[string]bool, now int64) {
	var d batch
	var waiting []string
	for _, owner := range inLine {
		if !holders[owner] {
			waiting = append(waiting, owner)
			d.add(r.rdb.B().Zscore().Key(timeoutKey).Member(owner).Build())
		}
	}
	d.send(r)
	for i, owner := range waiting {
		w := waiter{Owner: owner}
		if score, err := d.res[i].AsFloat64(); err == nil {
			in := int64(score) - now
			w.Deadline = &in
		}
		st.Queue = append(st.Queue, w)
	}
}

// liveRecords reads the first waiter records of key whose time (microseconds) is ahead of nowUs,
// soonest first, with their scores.
func liveRecords(rdb rueidis.Client, key string, nowUs int64) rueidis.Completed {
	return rdb.B().Zrangebyscore().Key(key).Min(liveFrom(nowUs)).Max("+inf").Withscores().Limit(0, maxShown).Build()
}

// waiters adds to st the waiters among records, the first of the n records of key whose time is
// ahead (scored in microseconds: by when the waiter will have tried again). waiter names a record's
// waiter, and reports whether it is one.
func (r *reader) waiters(st *state, key string, n int64, records []rueidis.ZScore, waiter func(string) (waiter, bool)) {
	for _, z := range records {
		w, ok := waiter(z.Member)
		if !ok {
			n--
			continue
		}
		in := (int64(z.Score) - r.nowUs) / 1000
		w.Deadline = &in
		st.Waiters = append(st.Waiters, w)
	}
	r.found(st, key, len(st.Waiters) > 0)
	st.omit("waiters", n-int64(len(st.Waiters)))
}

// group reads a group lock whose hash holds fields, of size in all: the values held, by owner. A
// value whose owner's lease has ended is held by nobody.
func (r *reader) group(st *state, fields map[string]string, size, now int64) {
	st.Kind = "group lock"
	byOwner := map[string]int{}
	held, read := groupHolds(fields, now)
	for _, g := range held {
		i, ok := byOwner[g.owner]
		if !ok {
			i = len(st.Holders)
			byOwner[g.owner] = i
			st.Holders = append(st.Holders, holderState{Owner: g.owner})
		}
		h := &st.Holders[i]
		h.Count = max(h.Count, g.count)
		h.Values = append(h.Values, groupValue{Field: g.field, Count: g.count, ExpiresMs: g.expires - now})
	}
	slices.SortFunc(st.Holders, func(a, b holderState) int { return strings.Compare(a.Owner, b.Owner) })
	for _, h := range st.Holders {
		slices.SortFunc(h.Values, func(a, b groupValue) int { return strings.Compare(a.Field, b.Field) })
	}
	st.omit("values", size/3-int64(read)) // three fields a value
	subs := r.subscribers(r.key(layout.Group.Channel, st.Name))
	st.Subscribers = &subs[0]
}

// rwlock reads a read-write lock's holders, their read leases, and the writers waiting.
func (r *reader) rwlock(st *state, fields map[string]string, now int64) {
	rdb := r.rdb
	writersKey := r.key(layout.RWLock.Writers, st.Name)
	var q batch
	writers := q.add(rdb.B().Zcount().Key(writersKey).Min(strconv.FormatInt(now+1, 10)).Max("+inf").Build())
	announced := q.add(rdb.B().Zrangebyscore().Key(writersKey).Min(strconv.FormatInt(now+1, 10)).Max("+inf").Withscores().Limit(0, maxShown).Build())
	leases := make([][]int, 0, len(fields))
	budget := maxLeases
	for _, owner := range sortedKeys(fields) {
		count, _ := strconv.ParseInt(fields[owner], 10, 64)
		h := holderState{Owner: owner, Count: count}
		var idx []int
		if o, ok := strings.CutSuffix(owner, layout.RWLock.WriterSuffix); ok {
			h.Owner, h.Write = o, true
		} else {
			for k := int64(1); k <= count && budget > 0; k, budget = k+1, budget-1 {
				idx = append(idx, q.add(rdb.B().Pttl().Key(readLease(r.names, st.Name, owner, k)).Build()))
			}
		}
		st.Holders = append(st.Holders, h)
		leases = append(leases, idx)
	}
	q.send(r)
	for i, idx := range leases {
		for _, j := range idx {
			st.Holders[i].Leases = append(st.Holders[i].Leases, q.int(j))
		}
	}
	// Lapsed announcements are left out: the next reader drops them; so is a holder's, for a moment
	// the writer's own.
	n := q.int(writers)
	for _, z := range q.zset(announced) {
		owner := strings.TrimSuffix(z.Member, layout.RWLock.WriterSuffix)
		if slices.ContainsFunc(st.Holders, func(h holderState) bool { return h.Owner == owner }) {
			n--
			continue
		}
		in := int64(z.Score) - now
		st.WaitingWriters = append(st.WaitingWriters, waiter{Owner: owner, Deadline: &in})
	}
	r.found(st, writersKey, n > 0)
	st.omit("waiting_writers", n-int64(len(st.WaitingWriters)))
}

// counter reads a semaphore or a latch: a number under the name.
func (r *reader) counter(st *state, now int64) {
	rdb := r.rdb
	n, ok := number(r.str(getNumber(rdb, st.Name)))
	if !ok {
		r.foreign(st, "string", -1)
		return
	}
	waitersKey := r.key(layout.Semaphore.Waiters, st.Name)
	var q batch
	exp := r.addExpirable(&q, st.Name, now)
	waiters := q.add(rdb.B().Zcount().Key(waitersKey).Min(liveFrom(r.nowUs)).Max("+inf").Build())
	records := q.add(liveRecords(rdb, waitersKey, r.nowUs))
	q.send(r)
	if q.int(exp) > 0 {
		r.expirable(st, &q, exp, n, now)
		return
	}
	r.waiters(st, waitersKey, q.int(waiters), q.zset(records), func(m string) (waiter, bool) {
		who, permits := semaphoreRecord(m)
		return waiter{Owner: who, Permits: permits}, true
	})
	subs := r.subscribers(r.key(layout.Semaphore.Channel, st.Name), latchChannel(r.names, st.Name))
	sem, latch := subs[0] > 0 || len(st.Waiters) > 0, subs[1] > 0
	switch {
	case sem && !latch:
		st.Kind, st.Available, st.Subscribers = "semaphore", &n, &subs[0]
	case latch && !sem:
		st.Kind, st.Count, st.Subscribers = "countdown latch", &n, &subs[1]
	default:
		st.Kind, st.Available, st.Count = "semaphore or countdown latch", &n, &n
	}
}

func (r *reader) str(cmd rueidis.Completed) (string, bool) {
	s, err := r.multi(cmd)[0].ToString()
	return s, err == nil
}

// addExpirable queues the reads of a permit-expirable semaphore's permits and returns the index
// of the first (their number; the first permits, soonest to expire; how many have expired).
func (r *reader) addExpirable(q *batch, name string, now int64) int {
	key := r.key(layout.Expirable.Permits, name)
	i := q.add(r.rdb.B().Zcard().Key(key).Build())
	q.add(firstOf(r.rdb, key, maxShown))
	q.add(r.rdb.B().Zcount().Key(key).Min("-inf").Max(strconv.FormatInt(now, 10)).Build())
	return i
}

// expirable fills st from the reads addExpirable queued at i, with available the count under the
// name (a missing count is 0).
func (r *reader) expirable(st *state, q *batch, i int, available int64, now int64) {
	key := r.key(layout.Expirable.Permits, st.Name)
	if !r.found(st, key, q.int(i) > 0) {
		return
	}
	st.Kind = "permit-expirable semaphore"
	available += q.int(i + 2) // expired: back in the pool at the next operation, whoever sends it
	for _, z := range q.zset(i + 1) {
		p := permit{ID: printable(z.Member)}
		if int64(z.Score) >= layout.Expirable.Never {
			p.Never = true
		} else {
			p.Expires = int64(z.Score) - now
		}
		st.Permits = append(st.Permits, p)
	}
	st.omit("permits", q.int(i)-int64(len(st.Permits)))
	st.Available = &available
}

func (r *reader) found(st *state, key string, ok bool) bool {
	if ok {
		st.Keys = append(st.Keys, key)
	}
	return ok
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
	if !st.printHeader(w) {
		return
	}
	st.RateLimiter.print(w)
	st.printHolders(w)
	st.printWaiters(w)
	if st.Subscribers != nil {
		fmt.Fprintf(w, "  processes waiting (subscribers of its channel): %d\n", *st.Subscribers)
	}
	if st.Kind == "fair lock" {
		st.printQueue(w)
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
		st.printPermits(w)
	}
}

// printHeader writes the line that says what st is, and reports whether there is more to say.
func (st *state) printHeader(w io.Writer) bool {
	fmt.Fprintf(w, "%s: %s", escape(st.Name), st.Kind)
	switch {
	case st.Other != nil:
		fmt.Fprintf(w, ": %s\n", st.Other)
		return false
	case st.Kind == "none":
		fmt.Fprintln(w, " (nothing stored: a free lock, an empty semaphore or an open latch)")
		return false
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
	return true
}

// printHolders writes a line for each holder, and a group lock's values under their holder.
func (st *state) printHolders(w io.Writer) {
	for _, h := range st.Holders {
		role := "holder"
		if st.Mode != "" {
			role = "reader"
			if h.Write {
				role = "writer"
			}
		}
		if h.Values != nil {
			fmt.Fprintf(w, "  %s %s  values %d", role, escape(h.Owner), len(h.Values))
		} else {
			fmt.Fprintf(w, "  %s %s  count %d", role, escape(h.Owner), h.Count)
		}
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
		for _, v := range h.Values {
			fmt.Fprintf(w, "    value %s  count %d  expires in %v\n", escape(v.Field), v.Count, ms(v.ExpiresMs))
		}
	}
	st.more(w, "holders")
	if n := st.Omitted["values"]; n > 0 {
		fmt.Fprintf(w, "    ... and about %d more values, held or not (not read)\n", n)
	}
}

// printWaiters writes the writers a read-write lock keeps readers out for, and the recorded waiters.
func (st *state) printWaiters(w io.Writer) {
	if len(st.WaitingWriters) > 0 {
		fmt.Fprintf(w, "  writers waiting, keeping new readers out: %d\n", int64(len(st.WaitingWriters))+st.Omitted["waiting_writers"])
		for _, q := range st.WaitingWriters {
			fmt.Fprintf(w, "    %s  announced for %v more\n", escape(q.Owner), ms(*q.Deadline))
		}
		st.more(w, "waiting_writers")
	}
	if len(st.Waiters) == 0 {
		return
	}
	fmt.Fprintf(w, "  waiters: %d\n", int64(len(st.Waiters))+st.Omitted["waiters"])
	for _, q := range st.Waiters {
		fmt.Fprintf(w, "    %s", escape(q.Owner))
		switch {
		case q.Permits == 1:
			fmt.Fprint(w, "  wants 1 permit")
		case q.Permits > 1:
			fmt.Fprintf(w, "  wants %d permits", q.Permits)
		}
		fmt.Fprintf(w, "  tries again within %v\n", ms(*q.Deadline))
	}
	st.more(w, "waiters")
}

// printQueue writes a fair lock's queue, head first, with each waiter's deadline.
func (st *state) printQueue(w io.Writer) {
	late := 0
	for _, q := range st.Queue {
		if q.Deadline != nil && *q.Deadline < 0 {
			late++
		}
	}
	if late == 0 {
		fmt.Fprintf(w, "  queue: %d waiting\n", int64(len(st.Queue))+st.Omitted["queue"])
	} else {
		fmt.Fprintf(w, "  queue: %d in line, %d of them past their deadline\n", int64(len(st.Queue))+st.Omitted["queue"], late)
	}
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
	st.more(w, "queue")
}

// printPermits writes a permit-expirable semaphore's acquired permits, with when each expires.
func (st *state) printPermits(w io.Writer) {
	fmt.Fprintf(w, "  acquired permits: %d\n", int64(len(st.Permits))+st.Omitted["permits"])
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
	st.more(w, "permits")
}

// more says how many items of a list were not read.
func (st *state) more(w io.Writer, what string) {
	if n := st.Omitted[what]; n > 0 {
		fmt.Fprintf(w, "    ... and %d more (not read)\n", n)
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
