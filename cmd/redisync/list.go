package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
)

const listHeader = `Usage: redisync list [--json] [--max-keys N] [PATTERN]

Lists the locks, semaphores, latches and rate limiters in Redis whose names match PATTERN (a glob,
as SCAN MATCH takes it; default every name), with their kind, holders, waiters and TTL. Read only.

It is safe on a production server, whatever the server holds. It walks the keys with SCAN on every
node (never KEYS), letting the server keep only the candidates: hashes whose names match PATTERN
(SCAN MATCH PATTERN TYPE hash), and the sorted sets and lists that are primitives' side keys; the
channels waiters subscribe to name the semaphores and latches (PUBSUB CHANNELS). Then it reads the
candidates with bounded commands, pipelined: one HSCAN of a few fields per hash tells a lock from
an application's hash, and no command reads a whole value. It sends a few commands per key at most,
each short, and keeps little in memory. Past --max-keys it stops, and says so (status 1).

An object is recognised by its layout, not by its name:
  lock             a hash whose every field is an owner "<id>:<number>" with a positive count
  read-write lock  such a hash with a "mode" field of "read" or "write" (writer fields end in ":write")
  fair lock        a lock with its queue (redisson_lock_queue:{NAME}, a list) or timeouts
                   (redisson_lock_timeout:{NAME}, a sorted set); listed from its queue even while free
  group lock       a hash of a group's values (multilock.Group): "<value>" = its owner, with the fields
                   "<value>:<owner>:expire_time" and "<value>:<owner>:lock_count"
  rate limiter     a hash with Redisson's "rate", "interval" and "type" fields
  permit-expirable semaphore
                   a sorted set {NAME}:timeout of permit ids (16 bytes) beside an absent or numeric NAME
  semaphore        a number under NAME while waiters wait for it: waiter records
                   (redisync_semaphore_waiters:{NAME}) or subscribers on its channel
  countdown latch  a number under NAME with subscribers on its channel
A semaphore or a latch that nobody waits for is a bare number, which cannot be told apart from an
application's counter: it is left out ('redisync inspect NAME' reads it). So are free locks, which
Redis does not store, and every key of another layout.

HOLDERS counts a lock's owners (a group lock's: those whose lease has not ended, among the few
hundred values read of a larger group, which DETAIL then says), or a permit-expirable semaphore's
acquired permits. WAITERS counts the live waiters Redis records: a
lock's waiter records (redisync waiters) whose time is ahead, not the marks of hand-overs, the
records of waiters that have gone, or the holders', a fair lock's queue before its deadlines, a
read-write lock's announced writers, a semaphore's waiter records; "-" where Redis records none (a
group lock's waiters are only subscribers). TTL is the main key's ("-" when it has no expiry or
does not exist).
`

const listFooter = `
Exit status: 0 (keys of other layouts are left out, not errors); 1 when --max-keys stopped the walk
(what was found is printed); 64 for bad flags or arguments; 69 when Redis is unreachable or
failing; 77 when Redis refuses (NOPERM, wrong user or password), or some keys could not be read
(those are left out, and counted on stderr).

Examples:
  redisync list
  redisync list 'orders:*'
  redisync list --json | jq '.[] | select(.waiters > 0)'
`

// listed is one object that list found.
type listed struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Holders *int   `json:"holders"` // null where holding is not by owner (a semaphore, a latch)
	Waiters *int64 `json:"waiters"` // null where Redis records no waiters
	// TTLms: the main key's remaining time to live; null without expiry or main key.
	TTLms  *int64 `json:"ttl_ms"`
	Detail string `json:"detail,omitempty"` // the mode, the available permits, the count, the rate
}

func cmdList(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("list", listHeader, listFooter, stdout, stderr)
	asJSON := cmd.fs.Bool("json", false, "print a JSON array (TTL in milliseconds)")
	maxKeys := cmd.fs.Int64("max-keys", defaultMaxKeys, "walk at most about `N` keys of each node in each of SCAN's passes; past it, the list is incomplete (status 1)")
	var conn connFlags
	conn.register(cmd.fs)
	pos, _, _, code := cmd.parse(args, 0)
	if code >= 0 {
		return code
	}
	switch {
	case len(pos) > 1:
		return cmd.usageError("unexpected argument %q", pos[1])
	case *maxKeys < 1:
		return cmd.usageError("--max-keys %d: want at least 1", *maxKeys)
	}
	pattern := "*"
	if len(pos) == 1 && pos[0] != "" {
		pattern = pos[0]
	}
	rdb, code := conn.rawClient(cmd, -1)
	if code >= 0 {
		return code
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l := newLister(ctx, rdb, conn.prefix, pattern, *maxKeys)
	found, err := l.list()
	if err != nil {
		return redisError(cmd, err)
	}
	if *asJSON {
		printJSON(stdout, found)
	} else {
		printList(stdout, found)
	}
	code = exitOK
	if l.refused > 0 {
		fmt.Fprintf(stderr, "redisync list: %d keys could not be read (NOPERM: the user may not read them) and are left out\n", l.refused)
		code = exitNoPerm
	}
	if l.stopped {
		fmt.Fprintf(stderr, "redisync list: stopped after walking about %d keys of a node (--max-keys): the list is incomplete; narrow PATTERN or raise --max-keys\n", *maxKeys)
		if code == exitOK {
			code = exitFailure
		}
	}
	return code
}

const (
	defaultMaxKeys = 1_000_000
	scanCount      = 200 // keys a SCAN call walks: each takes the server about 0.1 ms, so that a busy one serves others between
	listBatch      = 256 // commands of one pipeline
	listHashPage   = 16  // fields an HSCAN reads of a hash that may be a lock: locks have one or a few
)

// Side keys list finds objects by, and the channels of waiters it finds others by.
const (
	sideQueue        = 1 << iota // layout.FairLock.Queue: a fair lock's waiters
	sideFairTimeout              // layout.FairLock.Deadlines
	sideLockWaiters              // layout.Lock.Waiters
	sideWriters                  // layout.RWLock.Writers
	sideSemWaiters               // layout.Semaphore.Waiters
	sideExpirable                // layout.Expirable.Permits
	sideSemChannel               // layout.Semaphore.Channel has subscribers
	sideLatchChannel             // layout.Latch.Channel has subscribers
)

// object is what list learnt of one name while walking the keys.
type object struct {
	fields map[string]string // its hash's fields (a lock's owners, a rate limiter's settings), or nil
	more   bool              // the hash has more fields than were read
	side   int               // the side keys and channels found, side* bits
}

// lister walks the keys and channels of every node for objects whose names match a pattern. It
// tells objects by the names and types of their keys first (SCAN with TYPE, so that the server
// sends only the candidates), then reads each candidate with bounded commands, pipelined: on a
// server of any size it sends a few commands per key at most, none of them slow.
type lister struct {
	r       *reader
	prefix  string // --prefix: every name starts with it
	pattern string // what names match, prefix included
	maxKeys int64
	typed   bool // SCAN takes TYPE (Redis 6 and later)
	objects map[string]*object
	now     int64 // the server's clock, ms
	stopped bool  // a pass reached maxKeys
	refused int   // keys the user may not read
}

func newLister(ctx context.Context, rdb rueidis.Client, prefix, pattern string, maxKeys int64) *lister {
	return &lister{r: newReader(ctx, rdb), prefix: prefix, pattern: globEscape(prefix) + pattern,
		maxKeys: maxKeys, typed: true, objects: make(map[string]*object)}
}

// list finds the objects, sorted by name.
func (l *lister) list() ([]listed, error) {
	l.r.nowUs = serverMicros(l.r.multi(l.r.rdb.B().Time().Build())[0])
	l.now = l.r.nowUs / 1000
	if l.r.err != nil {
		return nil, l.r.err
	}
	for _, node := range masters(l.r.ctx, l.r.rdb) {
		if err := l.walk(node); err != nil {
			return nil, err
		}
	}
	// Subscribers may be connected to any node, replicas included.
	for _, node := range l.r.rdb.Nodes() {
		if err := l.channels(node); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(l.objects))
	for name := range l.objects {
		names = append(names, name)
	}
	slices.Sort(names)
	out := []listed{}
	for chunk := range slices.Chunk(names, listBatch/8) { // up to 8 reads an object
		found, err := l.read(chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// masters returns the nodes to walk: the masters of a cluster (a replica's keys are its master's),
// or the one server.
func masters(ctx context.Context, rdb rueidis.Client) []rueidis.Client {
	nodes := rdb.Nodes()
	var out []rueidis.Client
	if rdb.Mode() == rueidis.ClientModeCluster {
		slots, _ := rdb.Do(ctx, rdb.B().ClusterSlots().Build()).ToArray()
		seen := make(map[string]bool)
		for _, s := range slots {
			parts, _ := s.ToArray()
			if len(parts) < 3 {
				continue
			}
			m, _ := parts[2].ToArray()
			if len(m) < 2 {
				continue
			}
			host, _ := m[0].ToString()
			port, _ := m[1].AsInt64()
			addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
			if n, ok := nodes[addr]; ok && !seen[addr] {
				seen[addr] = true
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		for _, n := range nodes {
			out = append(out, n)
		}
	}
	return out
}

// walk finds the candidates on one node: hashes named like the pattern (locks, read-write locks,
// rate limiters), and the side keys that name fair locks, semaphores and their waiters.
func (l *lister) walk(node rueidis.Client) error {
	if l.typed {
		err := l.scan(node, l.pattern, "hash", l.hashes)
		if err != nil && hasCode(err, "ERR") && strings.Contains(err.Error(), "syntax") {
			l.typed = false // before Redis 6: one pass, and each key's TYPE
		} else if err != nil {
			return err
		}
	}
	if l.typed {
		if err := l.scan(node, "*", "zset", l.zsets); err != nil {
			return err
		}
		if err := l.scan(node, globEscape(layout.FairLock.Queue)+":*", "list", l.lists); err != nil {
			return err
		}
	} else if err := l.scan(node, "*", "", l.byType); err != nil {
		return err
	}
	return nil
}

// scan walks the keys of node that match with SCAN, of type typ ("" for any), and hands them to
// handle a page at a time.
func (l *lister) scan(node rueidis.Client, match, typ string, handle func(rueidis.Client, []string) error) error {
	var cursor uint64
	for walked := int64(0); ; walked += scanCount {
		if walked >= l.maxKeys {
			l.stopped = true
			return nil
		}
		b := node.B().Scan().Cursor(cursor).Match(match).Count(scanCount)
		var cmd rueidis.Completed
		if typ != "" {
			cmd = b.Type(typ).Build()
		} else {
			cmd = b.Build()
		}
		e, err := node.Do(l.r.ctx, cmd).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			if err := handle(node, e.Elements); err != nil {
				return err
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// byType sorts keys of any type by their TYPE, for a server whose SCAN cannot.
func (l *lister) byType(node rueidis.Client, keys []string) error {
	var hashes, zsets, lists []string
	for chunk := range slices.Chunk(keys, listBatch) {
		cmds := make(rueidis.Commands, len(chunk))
		for i, k := range chunk {
			cmds[i] = node.B().Type().Key(k).Build()
		}
		for i, res := range node.DoMulti(l.r.ctx, cmds...) {
			typ, err := res.ToString()
			switch {
			case hasCode(err, "NOPERM"):
				l.refused++
			case err != nil:
				return err
			case typ == "hash" && globMatch(l.pattern, chunk[i]):
				hashes = append(hashes, chunk[i])
			case typ == "zset":
				zsets = append(zsets, chunk[i])
			case typ == "list" && strings.HasPrefix(chunk[i], layout.FairLock.Queue+":"):
				lists = append(lists, chunk[i])
			}
		}
	}
	if err := l.zsets(node, zsets); err != nil {
		return err
	}
	if err := l.lists(node, lists); err != nil {
		return err
	}
	return l.hashes(node, hashes)
}

// object returns the object called name, if the pattern takes it.
func (l *lister) object(name string) *object {
	if !strings.HasPrefix(name, l.prefix) || !globMatch(l.pattern, name) {
		return nil
	}
	o := l.objects[name]
	if o == nil {
		o = &object{}
		l.objects[name] = o
	}
	return o
}

// hashes reads the first fields of each hash (one HSCAN), and keeps those of locks and rate
// limiters; other hashes are someone else's.
func (l *lister) hashes(node rueidis.Client, keys []string) error {
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return sideKey(l.r.names, k) })
	for chunk := range slices.Chunk(keys, listBatch) {
		cmds := make(rueidis.Commands, len(chunk))
		for i, k := range chunk {
			cmds[i] = node.B().Hscan().Key(k).Cursor(0).Count(listHashPage).Build()
		}
		for i, res := range node.DoMulti(l.r.ctx, cmds...) {
			page, err := res.AsScanEntry()
			switch {
			case hasCode(err, "NOPERM"):
				l.refused++
				continue
			case rueidis.IsRedisNil(err) || hasCode(err, "WRONGTYPE"):
				continue // gone, or another type since SCAN
			case err != nil:
				return err
			}
			fields := pairs(page.Elements)
			if _, _, _, rate := rateFields(fields); !rate && !ownerFields(fields) && !groupFields(fields) {
				continue
			}
			if o := l.object(chunk[i]); o != nil {
				o.fields, o.more = fields, page.Cursor != 0
			}
		}
	}
	return nil
}

// zsets finds the names whose side keys the sorted sets are.
func (l *lister) zsets(_ rueidis.Client, keys []string) error {
	for _, key := range keys {
		for _, side := range []struct {
			prefix string
			bit    int
		}{
			{layout.FairLock.Deadlines, sideFairTimeout},
			{layout.Lock.Waiters, sideLockWaiters},
			{layout.RWLock.Writers, sideWriters},
			{layout.Semaphore.Waiters, sideSemWaiters},
		} {
			if name, ok := unprefix(l.r.names, side.prefix, key, nil); ok {
				if o := l.object(name); o != nil {
					o.side |= side.bit
				}
			}
		}
		if name, ok := unsuffix(l.r.names, key, layout.Expirable.Permits, nil); ok {
			if o := l.object(name); o != nil {
				o.side |= sideExpirable
			}
		}
	}
	return nil
}

// lists finds the fair locks whose queues the lists are.
func (l *lister) lists(_ rueidis.Client, keys []string) error {
	for _, key := range keys {
		if name, ok := unprefix(l.r.names, layout.FairLock.Queue, key, nil); ok {
			if o := l.object(name); o != nil {
				o.side |= sideQueue
			}
		}
	}
	return nil
}

// channels finds the semaphores and latches that processes wait for, by the channels they
// subscribe to: a bare number under a name says nothing, its waiters do.
func (l *lister) channels(node rueidis.Client) error {
	latch := func(name string) string { return latchChannel(l.r.names, name) }
	semaphores, latches := globEscape(layout.Semaphore.Channel)+":*", globEscape(layout.Latch.Fallback)+"*"
	for _, res := range node.DoMulti(l.r.ctx,
		node.B().PubsubChannels().Pattern(semaphores).Build(),
		node.B().PubsubChannels().Pattern(latches).Build(),
		node.B().PubsubShardchannels().Pattern(semaphores).Build(),
		node.B().PubsubShardchannels().Pattern(latches).Build()) {
		chans, err := res.AsStrSlice()
		if err != nil {
			if _, isRedis := rueidis.IsRedisErr(err); !isRedis || hasCode(err, "NOPERM") {
				return err
			}
			continue // SHARDCHANNELS is missing before Redis 7
		}
		for _, ch := range chans {
			if name, ok := unprefix(l.r.names, layout.Semaphore.Channel, ch, nil); ok {
				if o := l.object(name); o != nil {
					o.side |= sideSemChannel
				}
				continue
			}
			rest := strings.TrimPrefix(ch, layout.Latch.Channel)
			if name, ok := inverse(rest, ch, latch, nil); ok {
				if o := l.object(name); o != nil {
					o.side |= sideLatchChannel
				}
			} else if name, ok := unprefix(l.r.names, layout.Latch.Fallback, ch, nil); ok {
				if o := l.object(name); o != nil {
					o.side |= sideLatchChannel
				}
			}
		}
	}
	return nil
}

// row is the reads of one object's row: the index of each read's result, -1 for none.
type row struct {
	name                                string
	o                                   *object
	ttl, size, queue, records, live     int
	marks, writers, value, permits, ids int
	expired, group                      int
}

// listedRecords is how many of a lock's live waiter records list reads to leave out those that are
// no waiter (a Java waiters' turn, a holder's): there are two of those at most, usually.
const listedRecords = 8

// read reads what the rows of the objects called names show, in one round trip (a rate limiter's
// window takes one more), and leaves out those that are no primitive after all.
func (l *lister) read(names []string) ([]listed, error) {
	var q batch
	rows := make([]row, len(names))
	for i, name := range names {
		rows[i] = l.reads(&q, name, l.objects[name])
	}
	q.send(l.r)
	var out []listed
	for _, w := range rows {
		if found, ok := l.row(w, &q); ok {
			out = append(out, found)
		}
		if l.r.err != nil {
			return nil, l.r.err
		}
	}
	return out, nil
}

// shape says what the hash fields of o make it: a rate limiter, a group lock, a read-write lock, or
// (none of them, with fields) a lock or fair lock.
func (o *object) shape() (rate, group, rw bool) {
	if o.fields == nil {
		return false, false, false
	}
	_, _, _, rate = rateFields(o.fields)
	group = !rate && groupFields(o.fields)
	_, rw = o.fields[layout.RWLock.Mode]
	return rate, group, rw
}

// reads adds to q the reads of the row of o, called name.
func (l *lister) reads(q *batch, name string, o *object) row {
	rdb, now := l.r.rdb, strconv.FormatInt(l.now, 10)
	w := row{name: name, o: o, ttl: q.add(rdb.B().Pttl().Key(name).Build()), size: -1, queue: -1, records: -1, live: -1,
		marks: -1, writers: -1, value: -1, permits: -1, expired: -1, ids: -1, group: -1}
	rate, group, rw := o.shape()
	switch {
	case group && o.more:
		// A group has three fields a value: read those of a few hundred values.
		w.group = q.add(rdb.B().Hscan().Key(name).Cursor(0).Count(maxGroupFields).Build())
		w.size = q.add(rdb.B().Hlen().Key(name).Build())
	case o.more:
		w.size = q.add(rdb.B().Hlen().Key(name).Build())
	}
	if o.side&(sideQueue|sideFairTimeout) != 0 {
		w.queue = q.add(rdb.B().Llen().Key(l.r.key(layout.FairLock.Queue, name)).Build())
		w.live = q.add(rdb.B().Zcount().Key(l.r.key(layout.FairLock.Deadlines, name)).Min("(" + now).Max("+inf").Build())
	}
	switch {
	case o.fields == nil:
		l.numberReads(q, &w)
	case !rate && !group && !rw:
		l.lockReads(q, &w)
	}
	if o.fields != nil && o.side&sideWriters != 0 {
		w.writers = q.add(rdb.B().Zcount().Key(l.r.key(layout.RWLock.Writers, name)).Min("(" + now).Max("+inf").Build())
	}
	return w
}

// lockReads adds to q the reads of a lock's or fair lock's row w: its live waiter records, and the
// holders' grant marks.
func (l *lister) lockReads(q *batch, w *row) {
	rdb, o, live := l.r.rdb, w.o, liveFrom(l.r.nowUs)
	if o.side&sideLockWaiters != 0 {
		key := l.r.key(layout.Lock.Waiters, w.name)
		w.records = q.add(rdb.B().Zcount().Key(key).Min(live).Max("+inf").Build())
		w.ids = q.add(rdb.B().Zrangebyscore().Key(key).Min(live).Max("+inf").Limit(0, listedRecords).Build())
	}
	if o.side&(sideQueue|sideFairTimeout) == 0 {
		// A fair lock handed over to a waiter has no queue left, but its holder's grant mark.
		w.marks = q.add(rdb.B().Hmget().Key(l.r.key(layout.FairLock.Records, w.name)).Field(sortedKeys(o.fields)...).Build())
	}
}

// numberReads adds to q the reads of row w, of a name without a hash: a semaphore's or latch's
// number, a semaphore's waiter records, a permit-expirable semaphore's permits.
func (l *lister) numberReads(q *batch, w *row) {
	rdb := l.r.rdb
	w.value = q.add(getNumber(rdb, w.name))
	if w.o.side&sideSemWaiters != 0 {
		w.records = q.add(rdb.B().Zcount().Key(l.r.key(layout.Semaphore.Waiters, w.name)).Min(liveFrom(l.r.nowUs)).Max("+inf").Build())
	}
	if w.o.side&sideExpirable != 0 {
		key := l.r.key(layout.Expirable.Permits, w.name)
		w.permits = q.add(rdb.B().Zcard().Key(key).Build())
		w.ids = q.add(firstOf(rdb, key, 4))
		w.expired = q.add(rdb.B().Zcount().Key(key).Min("-inf").Max(strconv.FormatInt(l.now, 10)).Build())
	}
}

// maxGroupFields is how many fields of a group lock's hash list asks for, beyond its first page.
const maxGroupFields = 768

// row decides from what was read whether w is one of ours, and summarises it.
func (l *lister) row(w row, q *batch) (listed, bool) {
	out := listed{Name: w.name}
	if ttl := q.int(w.ttl); ttl >= 0 {
		out.TTLms = &ttl
	}
	rate, group, _ := w.o.shape()
	switch {
	case w.o.fields == nil:
		return l.numberRow(out, w, q)
	case rate:
		return l.rateRow(out, w.o), true
	case group:
		return l.groupRow(out, w, q), true
	}
	return lockRow(out, w, q), true
}

// rateRow summarises the rate limiter o.
func (l *lister) rateRow(out listed, o *object) listed {
	st := &state{Name: out.Name}
	l.r.rateLimiter(st, o.fields, l.now)
	rs := st.RateLimiter
	out.Kind, out.Detail = "rate limiter", fmt.Sprintf("%d per %v, %s", rs.Rate, ms(rs.IntervalMs), rs.Type)
	if rs.Available != nil {
		out.Detail += fmt.Sprintf(", %d left", *rs.Available)
	}
	return out
}

// groupRow summarises the group lock of w: its holders, and the values held of those read.
func (l *lister) groupRow(out listed, w row, q *batch) listed {
	fields, more := w.o.fields, w.o.more
	if w.group >= 0 {
		if page, err := q.res[w.group].AsScanEntry(); err == nil {
			fields, more = pairs(page.Elements), page.Cursor != 0
			maps.Copy(fields, w.o.fields)
		}
	}
	values, _ := groupHolds(fields, l.now)
	owners := map[string]bool{}
	for _, v := range values {
		owners[v.owner] = true
	}
	holders := len(owners)
	out.Kind, out.Holders, out.Detail = "group lock", &holders, fmt.Sprintf("%d values held", len(values))
	if more { // holders and values of those read
		out.Detail = fmt.Sprintf("at least %d of about %d values held", len(values), q.int(w.size)/3)
	}
	return out
}

// lockRow summarises the lock, fair lock or read-write lock of w: its holders and live waiters.
func lockRow(out listed, w row, q *batch) listed {
	o := w.o
	holders := len(o.fields)
	if w.size >= 0 {
		holders = int(q.int(w.size))
	}
	var waiters int64
	mode, rw := o.fields[layout.RWLock.Mode]
	switch {
	case rw:
		holders--
		out.Kind, out.Detail, waiters = "read-write lock", "mode "+mode, q.int(w.writers)
	case w.queue >= 0 && q.int(w.queue) > 0 || o.side&sideFairTimeout != 0 || fairMarked(q, w.marks):
		out.Kind, waiters = "fair lock", q.int(w.live)
	default:
		out.Kind, waiters = "lock", q.int(w.records)
		if w.ids >= 0 {
			records, _ := q.res[w.ids].AsStrSlice()
			for _, m := range records {
				if turnMarker(m) || o.fields[recordOwner(m)] != "" {
					waiters-- // a Java waiters' turn, or a holder's record: no waiter
				}
			}
		}
	}
	out.Holders, out.Waiters = &holders, &waiters
	return out
}

// numberRow summarises w, a name without a hash: a fair lock free for a moment with waiters in
// line, a permit-expirable semaphore, a semaphore or a latch, or nothing of ours (a bare number,
// another string).
func (l *lister) numberRow(out listed, w row, q *batch) (listed, bool) {
	if w.queue >= 0 && q.int(w.queue) > 0 {
		holders, waiters := 0, q.int(w.live)
		out.Kind, out.Holders, out.Waiters = "fair lock", &holders, &waiters
		return out, true
	}
	value, isNumber := number(q.str(w.value))
	if _, exists := q.str(w.value); exists && !isNumber {
		return out, false // a string that is no count: someone else's
	}
	if n := int(q.int(w.permits)); n > 0 {
		for _, z := range q.zset(w.ids) {
			if len(z.Member) != 16 {
				return out, false // not a permit id
			}
		}
		available := value + q.int(w.expired)
		out.Kind, out.Holders, out.Detail = "permit-expirable semaphore", &n, fmt.Sprintf("%d available", available)
		return out, true
	}
	records := q.int(w.records)
	sem := w.o.side&sideSemChannel != 0 || records > 0
	latch := w.o.side&sideLatchChannel != 0
	switch {
	case latch && !sem && value > 0:
		out.Kind, out.Detail = "countdown latch", fmt.Sprintf("count %d", value)
	case sem:
		out.Kind, out.Waiters, out.Detail = "semaphore", &records, fmt.Sprintf("%d available", value)
	default:
		return out, false // a bare number: nothing says it is ours
	}
	return out, true
}

// fairMarked reports whether the fair lock records read at i hold a grant's mark: the lock was
// handed over to its holder.
func fairMarked(q *batch, i int) bool {
	if i < 0 {
		return false
	}
	recs, _ := q.res[i].AsStrSlice()
	return slices.ContainsFunc(recs, fairGrant)
}

// ownerFields reports whether every field is a lock's owner "<id>:<number>" (a read-write lock's
// writer "<id>:<number>:write") with a positive count, or a read-write lock's "mode", as Redisson
// and redisync write them.
func ownerFields(fields map[string]string) bool {
	if len(fields) == 0 {
		return false
	}
	for k, v := range fields {
		if k == layout.RWLock.Mode {
			if !rwMode(v) {
				return false
			}
			continue
		}
		owner := strings.TrimSuffix(k, layout.RWLock.WriterSuffix)
		i := strings.LastIndexByte(owner, ':')
		if i <= 0 {
			return false
		}
		if _, err := strconv.ParseUint(owner[i+1:], 10, 64); err != nil {
			return false
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 {
			return false
		}
	}
	return true
}

// globEscape makes s match itself in a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sideKey reports whether key is a side key of some object rather than a main key: a waiter
// record hash must not pass for a lock.
func sideKey(names core.Names, key string) bool {
	for _, p := range layout.SideKeys {
		if _, ok := unprefix(names, p, key, nil); ok {
			return true
		}
	}
	return false
}

// unprefix returns the name whose side key of the form prefix ("prefix:{name}") is key; a name
// whose main key is in exists is preferred.
func unprefix(names core.Names, prefix, key string, exists map[string]bool) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+":")
	if !ok {
		return "", false
	}
	return inverse(rest, key, func(name string) string { return names.Key(prefix, name) }, exists)
}

// unsuffix returns the name whose side key of the form suffix (":suffix", "{name}:suffix") is key;
// a name whose main key is in exists is preferred.
func unsuffix(names core.Names, key, suffix string, exists map[string]bool) (string, bool) {
	rest, ok := strings.CutSuffix(key, suffix)
	if !ok {
		return "", false
	}
	return inverse(rest, key, func(name string) string { return names.Key(suffix, name) }, exists)
}

// inverse finds the name that side makes key from, given what key holds besides the prefix or
// suffix. Names "x" and "{x}" have the same side keys: the one whose main key exists wins, else the
// one without braces.
func inverse(rest, key string, side func(string) string, exists map[string]bool) (string, bool) {
	var found []string
	for _, name := range []string{strings.TrimSuffix(strings.TrimPrefix(rest, "{"), "}"), rest, afterTag(rest)} {
		if name != "" && side(name) == key {
			found = append(found, name)
		}
	}
	for _, name := range found {
		if exists[name] {
			return name, true
		}
	}
	if len(found) == 0 {
		return "", false
	}
	return found[0], true
}

// afterTag returns what follows a leading "{tag}:", the form side keys take for names that no tag
// can contain.
func afterTag(s string) string {
	if i := strings.Index(s, "}:"); strings.HasPrefix(s, "{") && i > 0 {
		return s[i+2:]
	}
	return ""
}

func printList(w io.Writer, found []listed) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tHOLDERS\tWAITERS\tTTL\tDETAIL")
	for _, l := range found {
		ttl := "-"
		if l.TTLms != nil {
			ttl = ms(*l.TTLms).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(l.Name), l.Kind, orDash(l.Holders), orDash(l.Waiters), ttl, l.Detail)
	}
	tw.Flush()
}

func orDash[T int | int64](p *T) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(int64(*p), 10)
}
