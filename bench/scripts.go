package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

// The cost of each script on the server, driven raw: no library around it, 50 goroutines on
// distinct keys, one acquire and one release per pair, and the server's own figures (INFO
// commandstats after CONFIG RESETSTAT): microseconds per call of the script, and the calls it makes.
// What the library adds around the scripts (Go, allocations) is not in these figures.
//
//	cd bench && go run . -scripts

// scriptCase is one way to acquire and release a lock: the commands a pair sends for key.
type scriptCase struct {
	name  string
	about string
	pair  func(ctx context.Context, rdb rueidis.Client, key, owner string) error
	setup func(ctx context.Context, rdb rueidis.Client) error // once, before any round
}

// redissonLock and redissonUnlock are Redisson's RedissonLock scripts as a Java process sends them
// (tryLockInnerAsync and unlockInnerAsync, Redisson 3.x), the reference for the uncontended pair.
var (
	redissonLock = lua.New("redisson lock", `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
redis.call('hincrby', KEYS[1], ARGV[2], 1);
redis.call('pexpire', KEYS[1], ARGV[1]);
return nil;
end;
return redis.call('pttl', KEYS[1]);`)
	redissonUnlock = lua.New("redisson unlock", `local val = redis.call('get', KEYS[3]);
if val ~= false then return tonumber(val); end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
redis.call('pexpire', KEYS[1], ARGV[2]);
redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
return 0;
else
redis.call('del', KEYS[1]);
redis.call(ARGV[4], KEYS[2], ARGV[1]);
redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
return 1;
end;`)
	casRelease = lua.New("floor release", `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	// hdelRelease is rlock's last release without its word to waiters: the owner's field dropped,
	// the hash going with it.
	hdelRelease = lua.New("release without a wake-up", `return redis.call('hdel', KEYS[1], ARGV[1])`)
)

// rlockScripts are the scripts of package rlock's uncontended pair (its spec's "try" and "release").
var rlockScripts = struct{ try, release *lua.Script }{
	lua.Load("rlock_try.lua"),
	lua.Load("rlock_release.lua"),
}

// rlockCalls are the KEYS and ARGV of each goroutine's pair, made once.
var rlockCalls sync.Map

type rlockArgs struct{ tryKeys, tryArgs, releaseKeys, releaseArgs []string }

func rlockCall(key, owner string) *rlockArgs {
	if c, ok := rlockCalls.Load(key); ok {
		return c.(*rlockArgs)
	}
	vals := rlockVals(key, owner)
	fill := func(s *lua.Script) (keys, args []string) {
		for _, k := range s.Keys() {
			keys = append(keys, vals["K:"+k])
		}
		for _, a := range s.Args() {
			args = append(args, vals[a])
		}
		return keys, args
	}
	c := &rlockArgs{}
	c.tryKeys, c.tryArgs = fill(rlockScripts.try)
	vals["held"] = "1"
	c.releaseKeys, c.releaseArgs = fill(rlockScripts.release)
	rlockCalls.Store(key, c)
	return c
}

// side returns the side key or channel of key by its form, as on a standalone server.
func side(form, key string) string { return core.Names{}.Key(form, key) }

func rlockVals(key, owner string) map[string]string {
	return map[string]string{
		"K:lock": key, "K:counter": side(layout.Lock.Counter, key), "K:waiters": side(layout.Lock.Waiters, key),
		"K:clients": side(layout.Lock.Clients, key), "K:channel": side(layout.Lock.Channel, key),
		"K:wake": side(layout.Lock.Wake, key), "K:memo": side(layout.Memo, key),
		"field": owner, "owner": owner, "held": "0", "rid": owner + ":1", "lease": "30000", "reentrant": "1",
		"fenced": "0", "publish": "publish", "numsub": "numsub",
	}
}

var scriptCases = []scriptCase{
	{name: "floor", about: "SET NX PX 30000; EVALSHA compare-and-delete", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
		if err := rdb.Do(ctx, rdb.B().Set().Key(key).Value(owner).Nx().PxMilliseconds(30000).Build()).Error(); err != nil {
			return err
		}
		return casRelease.Exec(ctx, rdb, []string{key}, []string{owner}).Error()
	}},
	{name: "redisson", about: "Redisson's lock and unlock scripts (3 KEYS, 5 ARGV on unlock, with its latch)", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
		if err := redissonLock.Exec(ctx, rdb, []string{key}, []string{"30000", owner}).Error(); err != nil && !rueidis.IsRedisNil(err) {
			return err
		}
		keys := []string{key, side(layout.Lock.Channel, key), side(layout.Lock.UnlockLatch, key) + ":" + owner + ":" + strconv.FormatInt(requests.Add(1), 10)}
		err := redissonUnlock.Exec(ctx, rdb, keys, []string{"0", "30000", owner, "publish", "13000"}).Error()
		if rueidis.IsRedisNil(err) {
			err = nil
		}
		return err
	}},
	{name: "rlock", about: "package rlock's first try and release, as the library sends them", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
		c := rlockCall(key, owner)
		if err := rlockScripts.try.Exec(ctx, rdb, c.tryKeys, c.tryArgs).Error(); err != nil {
			return err
		}
		return rlockScripts.release.Exec(ctx, rdb, c.releaseKeys, c.releaseArgs).Error()
	}},
	{name: "no wake", about: "rlock's first try, and a release that drops the field and tells no waiter (HDEL alone)", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
		c := rlockCall(key, owner)
		if err := rlockScripts.try.Exec(ctx, rdb, c.tryKeys, c.tryArgs).Error(); err != nil {
			return err
		}
		return hdelRelease.Exec(ctx, rdb, []string{key}, []string{owner}).Error()
	}},
}

// requests numbers the requests of Redisson's unlock, whose latch is per request.
var requests atomic.Int64

// scriptCosts runs every case on a fresh server, rounds times for d each, the cases taking turns
// within a round so that a busy machine weighs on all alike, and prints each case's median round.
func scriptCosts(w io.Writer, d time.Duration, rounds int) error {
	srv, err := redistest.NewServer(redistest.Config{})
	if err != nil {
		return err
	}
	defer srv.Close()
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rdb.Close()
	for _, sc := range scriptCases {
		if sc.setup != nil {
			if err := sc.setup(context.Background(), rdb); err != nil {
				return fmt.Errorf("%s: %w", sc.name, err)
			}
		}
	}
	runs := make([][]scriptRun, len(scriptCases))
	for range rounds {
		for i, sc := range scriptCases {
			r, err := runCase(srv, rdb, sc, d)
			if err != nil {
				return fmt.Errorf("%s: %w", sc.name, err)
			}
			runs[i] = append(runs[i], r)
		}
	}
	fmt.Fprintf(w, "script costs on the server (%d goroutines on distinct keys; median of %d rounds of %v; INFO commandstats)\n", 50, rounds, d)
	fmt.Fprintf(w, "%-10s %10s %14s %12s  %s\n", "case", "pairs/s", "srv us/pair", "calls/pair", "calls inside, per pair")
	for i, sc := range scriptCases {
		rs := runs[i]
		sort.Slice(rs, func(a, b int) bool { return rs[a].usPerPair < rs[b].usPerPair })
		r := rs[len(rs)/2]
		fmt.Fprintf(w, "%-10s %10.0f %14.2f %12.2f  %s\n", sc.name, r.pairsPerSec, r.usPerPair, r.calls, r.inside)
		fmt.Fprintf(w, "%-10s %s\n", "", sc.about)
	}
	return nil
}

type scriptRun struct {
	pairsPerSec, usPerPair, calls float64
	inside                        string
}

// runCase drives one case for d: 50 goroutines, each on a key of its own.
func runCase(srv *redistest.Server, rdb rueidis.Client, sc scriptCase, d time.Duration) (scriptRun, error) {
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		return scriptRun{}, err
	}
	var pairs atomic.Int64
	var first error
	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 50 {
		wg.Go(func() {
			key := fmt.Sprintf("cost:%s:%d", sc.name, g)
			owner := fmt.Sprintf("c:%d", g)
			for ctx.Err() == nil {
				if err := sc.pair(context.Background(), rdb, key, owner); err != nil {
					once.Do(func() { first = err })
					return
				}
				pairs.Add(1)
			}
		})
	}
	wg.Wait()
	if first != nil {
		return scriptRun{}, first
	}
	stats, err := commandStats(srv)
	if err != nil {
		return scriptRun{}, err
	}
	n := float64(pairs.Load())
	var total, calls float64
	var inside []string
	for cmd, st := range stats {
		switch {
		case cmd == "config|resetstat", cmd == "info", cmd == "hello", cmd == "function|load":
		case cmd == "evalsha", cmd == "eval", cmd == "fcall", sc.name == "floor" && cmd == "set":
			total += st.usec
			calls += st.calls
		default:
			inside = append(inside, fmt.Sprintf("%s %.2f", cmd, st.calls/n))
		}
	}
	sort.Strings(inside)
	return scriptRun{pairsPerSec: n / d.Seconds(), usPerPair: total / n, calls: calls / n, inside: strings.Join(inside, ", ")}, nil
}

type cmdStat struct{ calls, usec float64 }

// commandStats reads INFO commandstats: calls and microseconds of every command.
func commandStats(srv *redistest.Server) (map[string]cmdStat, error) {
	out, err := srv.Do("INFO", "commandstats")
	if err != nil {
		return nil, err
	}
	stats := map[string]cmdStat{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				st.calls = f
			case "usec":
				st.usec = f
			}
		}
		stats[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return stats, nil
}

// Experiments: leaner scripts for the uncontended pair, measured beside the library's.
var (
	leanTry = lua.New("lean try", `local ttl = redis.call('pttl', KEYS[1])
if ttl == -2 then
  if redis.call('zscore', KEYS[2], '~java') then return {0, 1} end
  redis.call('hset', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  return {1, 1, 0}
end
return {0, ttl}`)
	leanRelease = lua.New("lean release", `local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if n == nil then return -1 end
if n > 1 then redis.call('hincrby', KEYS[1], ARGV[1], -1) return n - 1 end
redis.call('del', KEYS[1])
if redis.call('pubsub', 'numsub', KEYS[2])[2] > 0 then redis.call('publish', KEYS[2], '0') end
return 0`)
	leanTry2 = lua.New("lean try 2", `if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, 1, 0}
end
return {0, redis.call('pttl', KEYS[1])}`)
	leanRelease2 = lua.New("lean release 2", `local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n == 0 then redis.call('del', KEYS[1]) end
return n`)
)

func init() {
	scriptCases = append(scriptCases,
		scriptCase{name: "lean", about: "PTTL ZSCORE HSET PEXPIRE; HGET DEL NUMSUB (2 KEYS, 3 ARGV)", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
			if err := leanTry.Exec(ctx, rdb, []string{key, side(layout.Lock.Waiters, key)}, []string{owner, "0", "30000"}).Error(); err != nil {
				return err
			}
			return leanRelease.Exec(ctx, rdb, []string{key, side(layout.Lock.Channel, key)}, []string{owner, "1", "30000"}).Error()
		}},
		scriptCase{name: "minimal", about: "EXISTS HSET PEXPIRE; HINCRBY DEL (1 KEY, 2 ARGV): the least a hash lock does", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
			if err := leanTry2.Exec(ctx, rdb, []string{key}, []string{owner, "30000"}).Error(); err != nil {
				return err
			}
			return leanRelease2.Exec(ctx, rdb, []string{key}, []string{owner}).Error()
		}},
	)
}

var leanReleaseWide = lua.New("lean release wide", `local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if n == nil then return -1 end
if n > 1 then redis.call('hincrby', KEYS[1], ARGV[1], -1) return n - 1 end
redis.call('del', KEYS[1])
if redis.call('pubsub', 'numsub', KEYS[2])[2] > 0 then redis.call('publish', KEYS[2], '0') end
return 0`)

var leanReleaseHelpers = lua.New("lean release helpers", `local function a(x) return x + 1 end
local function b(x) return x + 2 end
local function c(x) return x + 3 end
local function d(x) return x + 4 end
local function e(x) return x + 5 end
local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if n == nil then return -1 end
if n > 1 then redis.call('hincrby', KEYS[1], ARGV[1], -1) return n - 1 end
redis.call('del', KEYS[1])
if redis.call('pubsub', 'numsub', KEYS[2])[2] > 0 then redis.call('publish', KEYS[2], '0') end
return 0`)

func init() {
	scriptCases = append(scriptCases,
		scriptCase{name: "lean+5p", about: "lean, its release given 5 more KEYS and 3 more ARGV, unused", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
			if err := leanTry.Exec(ctx, rdb, []string{key, side(layout.Lock.Waiters, key)}, []string{owner, "0", "30000"}).Error(); err != nil {
				return err
			}
			k := "{" + key + "}"
			return leanReleaseWide.Exec(ctx, rdb, []string{key, side(layout.Lock.Channel, key), "a:" + k, "b:" + k, "c:" + k, "d:" + k, "e:" + k},
				[]string{owner, "1", "30000", "publish", "numsub", "x"}).Error()
		}},
		scriptCase{name: "lean+fn", about: "lean, its release defining 5 local functions it does not call", pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
			if err := leanTry.Exec(ctx, rdb, []string{key, side(layout.Lock.Waiters, key)}, []string{owner, "0", "30000"}).Error(); err != nil {
				return err
			}
			return leanReleaseHelpers.Exec(ctx, rdb, []string{key, side(layout.Lock.Channel, key)}, []string{owner, "1", "30000"}).Error()
		}},
	)
}

// leanLibrary is the lean pair as Redis Functions: loaded once, called with FCALL.
const leanLibrary = `#!lua name=redisync_bench
redis.register_function('lean_try', function(keys, args)
  local ttl = redis.call('pttl', keys[1])
  if ttl == -2 then
    if redis.call('zscore', keys[2], '~java') then return {0, 1} end
    redis.call('hset', keys[1], args[1], 1)
    redis.call('pexpire', keys[1], args[3])
    return {1, 1, 0}
  end
  return {0, ttl}
end)
redis.register_function('lean_release', function(keys, args)
  local n = tonumber(redis.call('hget', keys[1], args[1]))
  if n == nil then return -1 end
  if n > 1 then redis.call('hincrby', keys[1], args[1], -1) return n - 1 end
  redis.call('del', keys[1])
  if redis.call('pubsub', 'numsub', keys[2])[2] > 0 then redis.call('publish', keys[2], '0') end
  return 0
end)`

func init() {
	scriptCases = append(scriptCases, scriptCase{name: "lean-fcall", about: "lean, as Redis Functions (FUNCTION LOAD once, FCALL)",
		setup: func(ctx context.Context, rdb rueidis.Client) error {
			return rdb.Do(ctx, rdb.B().FunctionLoad().Replace().FunctionCode(leanLibrary).Build()).Error()
		},
		pair: func(ctx context.Context, rdb rueidis.Client, key, owner string) error {
			if err := rdb.Do(ctx, rdb.B().Fcall().Function("lean_try").Numkeys(2).Key(key, side(layout.Lock.Waiters, key)).Arg(owner, "0", "30000").Build()).Error(); err != nil {
				return err
			}
			return rdb.Do(ctx, rdb.B().Fcall().Function("lean_release").Numkeys(2).Key(key, side(layout.Lock.Channel, key)).Arg(owner, "1", "30000").Build()).Error()
		}})
}
