package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
)

const listHeader = `Usage: redisync list [--json] [PATTERN]

Lists the locks, semaphores, latches and rate limiters in Redis whose names match PATTERN (a glob,
as SCAN MATCH takes it; default every name), with their kind, holders, waiters and TTL. It walks the
keys with SCAN on every node, never KEYS, and reads each candidate as 'redisync inspect' does (read
only). PATTERN is matched against the names of the objects' main keys and side keys alike.

An object is recognised by its layout, not by its name:
  lock             a hash whose every field is an owner "<id>:<number>" with a positive count
  read-write lock  such a hash with a "mode" field of "read" or "write" (writer fields end in ":write")
  fair lock        a lock with its queue (redisson_lock_queue:{NAME}, a list) or timeouts
                   (redisson_lock_timeout:{NAME}, a sorted set); listed from them even while free
  rate limiter     a hash with Redisson's "rate", "interval" and "type" fields
  permit-expirable semaphore
                   a sorted set {NAME}:timeout of permit ids (32 hex digits) beside an absent or
                   numeric NAME
  semaphore        a number under NAME while waiters wait for it: waiter records
                   (redisync_semaphore_waiters:{NAME}) or subscribers on its channel
  countdown latch  a number under NAME with subscribers on its channel
A semaphore or a latch that nobody waits for is a bare number, which cannot be told apart from an
application's counter: it is left out ('redisync inspect NAME' reads it). So are free locks, which
Redis does not store, and every key of another layout.

HOLDERS counts a lock's owners, or a permit-expirable semaphore's acquired permits. WAITERS counts
what Redis records of waiters: a lock's waiter records (redisync waiters; they lapse by themselves),
a fair lock's queue, a read-write lock's announced writers, a semaphore's waiter records; "-" where
Redis records none. TTL is the main key's ("-" when it has no expiry or does not exist).
`

const listFooter = `
Exit status: 0, 69 when Redis is unreachable or failing.

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
	var conn connFlags
	conn.register(cmd.fs)
	pos, _, _, code := cmd.parse(args, 0)
	if code >= 0 {
		return code
	}
	if len(pos) > 1 {
		return cmd.usageError("unexpected argument %q", pos[1])
	}
	pattern := "*"
	if len(pos) == 1 && pos[0] != "" {
		pattern = pos[0]
	}
	opt, err := conn.option()
	if err != nil {
		return cmd.usageError("%v", err)
	}
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		fmt.Fprintf(stderr, "redisync list: cannot connect to %s: %v\n", describe(opt), err)
		return exitUnavailable
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	found, err := list(ctx, rdb, conn.prefix, pattern)
	if err != nil {
		fmt.Fprintf(stderr, "redisync list: %v\n", err)
		return exitUnavailable
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(found)
		return exitOK
	}
	printList(stdout, found)
	return exitOK
}

// list finds the objects whose keys are prefix followed by what matches pattern, sorted by name.
func list(ctx context.Context, rdb rueidis.Client, prefix, pattern string) ([]listed, error) {
	names := core.Names{Cluster: rdb.Mode() == rueidis.ClientModeCluster}
	keys, err := scan(ctx, rdb, globEscape(prefix)+pattern)
	if err != nil {
		return nil, err
	}
	types, err := keyTypes(ctx, rdb, keys)
	if err != nil {
		return nil, err
	}
	// Candidate names, from main keys and from the side keys that name them.
	exists := make(map[string]bool, len(keys))
	for _, key := range keys {
		exists[key] = true
	}
	candidates := make(map[string]bool)
	for i, key := range keys {
		switch types[i] {
		case "hash", "string":
			if !sideKey(names, key) {
				candidates[key] = true
			}
		case "list":
			if name, ok := unprefix(names, "redisson_lock_queue", key, exists); ok {
				candidates[name] = true
			}
		case "zset":
			if name, ok := unprefix(names, "redisson_lock_timeout", key, exists); ok {
				candidates[name] = true
			} else if name, ok := unsuffix(names, key, "timeout", exists); ok {
				candidates[name] = true
			}
		}
	}
	found := make([]string, 0, len(candidates))
	for name := range candidates {
		if strings.HasPrefix(name, prefix) { // a side key matched with the name elsewhere in it
			found = append(found, name)
		}
	}
	slices.Sort(found)
	out := []listed{}
	for _, name := range found {
		st, err := inspect(ctx, rdb, name)
		if err == nil && st.Kind == "other" {
			continue // a key no primitive uses
		}
		if err != nil {
			if ctx.Err() != nil || !isDataError(err) {
				return nil, err
			}
			continue // a string that is not a number, say: not ours
		}
		r := newReader(ctx, rdb)
		if l, ok := r.recognise(st); ok {
			out = append(out, l)
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}

// isDataError reports whether err is about what a key holds rather than about reaching Redis.
func isDataError(err error) bool {
	if _, ok := rueidis.IsRedisErr(err); ok {
		return true
	}
	return strings.Contains(err.Error(), "not a number")
}

// recognise decides, from what inspect read, whether st is one of ours, and summarises it.
func (r *reader) recognise(st *state) (listed, bool) {
	l := listed{Name: st.Name, Kind: st.Kind}
	if st.TTLms != nil && *st.TTLms >= 0 {
		l.TTLms = st.TTLms
	}
	holders := len(st.Holders)
	switch st.Kind {
	case "lock", "fair lock", "read-write lock":
		if !ownersShaped(st) {
			return l, false
		}
		if st.Kind == "lock" && holders == 0 {
			return l, false // a fencing token alone: a free lock
		}
		l.Holders = &holders
		switch st.Kind {
		case "lock":
			n := r.records(r.names.Prefixed("redisync_lock_waiters", st.Name))
			l.Waiters = &n
		case "fair lock":
			n := int64(len(st.Queue))
			l.Waiters = &n
		default:
			n := int64(len(st.WaitingWriters))
			l.Waiters, l.Detail = &n, "mode "+st.Mode
		}
	case "rate limiter":
		rs := st.RateLimiter
		l.Detail = fmt.Sprintf("%d per %v, %s", rs.Rate, ms(rs.IntervalMs), rs.Type)
		if rs.Available != nil {
			l.Detail += fmt.Sprintf(", %d left", *rs.Available)
		}
	case "permit-expirable semaphore":
		for _, p := range st.Permits {
			if len(p.ID) != 32 {
				return l, false
			}
		}
		holders = len(st.Permits)
		l.Holders = &holders
		l.Detail = fmt.Sprintf("%d available", *st.Available)
	case "semaphore", "semaphore or countdown latch":
		n := r.card(r.names.Prefixed("redisync_semaphore_waiters", st.Name))
		if st.Kind != "semaphore" && n == 0 {
			return l, false // a bare number: nothing says it is ours
		}
		l.Kind, l.Waiters = "semaphore", &n
		l.Detail = fmt.Sprintf("%d available", *st.Available)
	case "countdown latch":
		l.Detail = fmt.Sprintf("count %d", *st.Count)
	default:
		return l, false
	}
	return l, true
}

// ownersShaped reports whether every holder of a lock is an owner "<id>:<number>" with a positive
// count, as Redisson and redisync write them.
func ownersShaped(st *state) bool {
	if st.Kind == "read-write lock" && st.Mode != "read" && st.Mode != "write" {
		return false
	}
	for _, h := range st.Holders {
		i := strings.LastIndexByte(h.Owner, ':')
		if i <= 0 || h.Count < 1 {
			return false
		}
		if _, err := strconv.ParseUint(h.Owner[i+1:], 10, 64); err != nil {
			return false
		}
	}
	return true
}

// records counts a lock's waiter records, leaving out the members that mark a Java waiter's turn
// ("~owed", "~java": see rlock_wake.lua).
func (r *reader) records(key string) int64 {
	members, _ := r.do(r.rdb.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
	var n int64
	for _, m := range members {
		if !strings.HasPrefix(m, "~") {
			n++
		}
	}
	return n
}

func (r *reader) card(key string) int64 {
	n, _ := r.do(r.rdb.B().Zcard().Key(key).Build()).AsInt64()
	return n
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

// scan returns every key matching pattern, on every node (a replica's keys are its master's).
func scan(ctx context.Context, rdb rueidis.Client, pattern string) ([]string, error) {
	seen := make(map[string]bool)
	var keys []string
	for _, node := range rdb.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				return nil, err
			}
			for _, k := range e.Elements {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return keys, nil
}

// keyTypes returns the TYPE of each key, pipelined.
func keyTypes(ctx context.Context, rdb rueidis.Client, keys []string) ([]string, error) {
	types := make([]string, 0, len(keys))
	for batch := range slices.Chunk(keys, 500) {
		cmds := make(rueidis.Commands, len(batch))
		for i, k := range batch {
			cmds[i] = rdb.B().Type().Key(k).Build()
		}
		for _, res := range rdb.DoMulti(ctx, cmds...) {
			t, err := res.ToString()
			if err != nil {
				return nil, err
			}
			types = append(types, t)
		}
	}
	return types, nil
}

// sidePrefixes are the prefixes of the side keys "prefix:{name}" of every primitive.
var sidePrefixes = []string{
	"redisson_lock_queue", "redisson_lock_timeout", "redisson_lock_token", "redisson_unlock_latch",
	"redisync_fair_waiters", "redisync_lock_clients", "redisync_lock_waiters", "redisync_rwlock_writers",
	"redisync_semaphore_clients", "redisync_semaphore_grants", "redisync_semaphore_waiters",
}

// sideKey reports whether key is a side key of some object rather than a main key: a waiter
// record hash must not pass for a lock.
func sideKey(names core.Names, key string) bool {
	for _, p := range sidePrefixes {
		if _, ok := unprefix(names, p, key, nil); ok {
			return true
		}
	}
	return false
}

// unprefix returns the name whose side key Prefixed(prefix, name) is key; a name whose main key is
// in exists is preferred.
func unprefix(names core.Names, prefix, key string, exists map[string]bool) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+":")
	if !ok {
		return "", false
	}
	return inverse(rest, key, func(name string) string { return names.Prefixed(prefix, name) }, exists)
}

// unsuffix returns the name whose side key Suffixed(name, suffix) is key; a name whose main key is
// in exists is preferred.
func unsuffix(names core.Names, key, suffix string, exists map[string]bool) (string, bool) {
	rest, ok := strings.CutSuffix(key, ":"+suffix)
	if !ok {
		return "", false
	}
	return inverse(rest, key, func(name string) string { return names.Suffixed(name, suffix) }, exists)
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
