package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
)

// What inspect and list read is bounded whatever the keys hold, so that pointing them at a
// production Redis costs it little: no command reads a whole value of unbounded size (no HGETALL,
// no LRANGE or ZRANGE to -1, no GET of a string that may be large), and every command is O(1) or
// bounded by the constants below.
const (
	maxShown    = 100 // holders, waiters, permits shown of one object; the rest are counted
	hashPage    = 128 // fields an HSCAN asks for: a lock or rate limiter has a few
	maxHashScan = 8   // HSCAN pages read of a hash whose fields keep looking like a lock's
	maxLeases   = 256 // read-hold leases read of a read-write lock
	maxGrants   = 1000
	numberLen   = 20 // the longest decimal int64; GETRANGE reads one byte more, to see a longer value
)

// reader sends read-only commands, pipelined, and remembers the first error that is not a missing
// key or a key of another type (which only means: not this primitive).
type reader struct {
	ctx   context.Context
	rdb   rueidis.Client
	names core.Names
	nowUs int64 // the server's clock, in microseconds, when the reading started
	err   error
}

func newReader(ctx context.Context, rdb rueidis.Client) *reader {
	return &reader{ctx: ctx, rdb: rdb, names: core.Names{Cluster: rdb.Mode() == rueidis.ClientModeCluster}}
}

// key returns the side key or channel of name by its form (package layout).
func (r *reader) key(form, name string) string { return r.names.Key(form, name) }

// multi sends cmds in one round trip and returns their results.
func (r *reader) multi(cmds ...rueidis.Completed) []rueidis.RedisResult {
	if len(cmds) == 0 {
		return nil
	}
	res := r.rdb.DoMulti(r.ctx, cmds...)
	for _, x := range res {
		r.keep(x.Error())
	}
	return res
}

func (r *reader) keep(err error) {
	if err == nil || r.err != nil || rueidis.IsRedisNil(err) || hasCode(err, "WRONGTYPE") {
		return
	}
	r.err = err
}

// batch collects commands whose results are read once they are all sent in one round trip.
type batch struct {
	cmds []rueidis.Completed
	res  []rueidis.RedisResult
}

// add queues cmd and returns the index of its result.
func (b *batch) add(cmd rueidis.Completed) int {
	b.cmds = append(b.cmds, cmd)
	return len(b.cmds) - 1
}

func (b *batch) send(r *reader) {
	b.res = r.multi(b.cmds...)
}

func (b *batch) int(i int) int64 {
	if i < 0 {
		return 0
	}
	n, _ := b.res[i].AsInt64()
	return n
}

func (b *batch) str(i int) (string, bool) {
	if i < 0 {
		return "", false
	}
	s, err := b.res[i].ToString()
	return s, err == nil
}

func (b *batch) zset(i int) []rueidis.ZScore {
	if i < 0 {
		return nil
	}
	z, _ := b.res[i].AsZScores()
	return z
}

// number reads a GETRANGE of numberLen+1 bytes as a whole number; false when it is none (or longer).
func number(s string, ok bool) (int64, bool) {
	if !ok || len(s) > numberLen {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// getNumber is the bounded read of a counter: at most numberLen+1 bytes of whatever the key holds.
func getNumber(rdb rueidis.Client, key string) rueidis.Completed {
	return rdb.B().Getrange().Key(key).Start(0).End(numberLen).Build()
}

// keyType reads the type of name's key ("none": no key) and, in the same round trip, what read
// asks of it; code is the exit status (>= 0) when Redis refused the TYPE.
func keyType(ctx context.Context, cmd *command, c *redisync.Client, name string, read func(rueidis.Client, string) rueidis.Completed) (typ string, res rueidis.RedisResult, code int) {
	rdb := c.Redis()
	key, _ := core.Of(c).Name("", name)
	both := rdb.DoMulti(ctx, rdb.B().Type().Key(key).Build(), read(rdb, key))
	typ, err := both[0].ToString()
	if err != nil {
		return "", both[1], redisError(cmd, err)
	}
	return typ, both[1], -1
}

// firstOf returns the first n members of a sorted set, lowest score first, with their scores.
func firstOf(rdb rueidis.Client, key string, n int) rueidis.Completed {
	return rdb.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(n - 1)).Withscores().Build()
}

// serverMicros reads TIME's answer in microseconds; the local clock when it has none.
func serverMicros(res rueidis.RedisResult) int64 {
	t, err := res.AsStrSlice()
	if err != nil || len(t) != 2 {
		return time.Now().UnixMicro()
	}
	s, _ := strconv.ParseInt(t[0], 10, 64)
	us, _ := strconv.ParseInt(t[1], 10, 64)
	return s*1_000_000 + us
}

// subscribers counts the subscribers of each channel on every node (classic and sharded Pub/Sub),
// one round trip per node.
func (r *reader) subscribers(channels ...string) []int64 {
	counts := make([]int64, len(channels))
	for _, node := range r.rdb.Nodes() {
		// SHARDNUMSUB is missing before Redis 7: not an error for a reader.
		for _, res := range node.DoMulti(r.ctx,
			node.B().PubsubNumsub().Channel(channels...).Build(),
			node.B().PubsubShardnumsub().Channel(channels...).Build()) {
			m, err := res.AsIntMap()
			if err != nil {
				if !rueidis.IsRedisNil(err) {
					if _, ok := rueidis.IsRedisErr(err); !ok || hasCode(err, "NOPERM") {
						r.keep(err)
					}
				}
				continue
			}
			for i, ch := range channels {
				counts[i] += m[ch]
			}
		}
	}
	return counts
}

// recordOwner is the owner "<client id>:<owner id>" at the start of a waiter's record, which the
// library writes as the owner followed by numbers of its own; the record itself otherwise.
func recordOwner(member string) string {
	if i := strings.IndexByte(member, ':'); i > 0 {
		if j := strings.IndexByte(member[i+1:], ':'); j > 0 {
			return member[:i+1+j]
		}
	}
	return member
}
