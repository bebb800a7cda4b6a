package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
)

// Redisson's scripts for the newer RRateLimiter methods, as RedissonRateLimiter.java and
// RedissonExpirable.java (66863978) describe them, with their keys (the limiter, the value, the
// client's value, the permits, the client's permits) and arguments.

// redissonRelease is releaseAsync(permits): the value (the rate when there is none) grows by ARGV[1],
// never above the rate; the grants stay; then the keep-alive rule of an acquisition.
const redissonRelease = `
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
assert(rate and interval and kind, 'RateLimiter is not initialized')
local value, permits = KEYS[2], KEYS[4]
if kind == '1' then
  value, permits = KEYS[3], KEYS[5]
end
local current = redis.call('get', value)
if current then
  current = tonumber(current)
else
  current = tonumber(rate)
end
redis.call('set', value, math.min(tonumber(rate), current + tonumber(ARGV[1])))
local keep = redis.call('hget', KEYS[1], 'keepAliveTime')
if keep and tonumber(keep) > 0 then
  redis.call('pexpire', KEYS[1], keep)
  redis.call('pexpire', value, keep)
  redis.call('pexpire', permits, keep)
else
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', value, ttl)
    redis.call('pexpire', permits, ttl)
  end
end`

// redissonSetOrUpdate is setOrUpdateAsync, behind setRate(args) and updateRate(args). ARGV: rate,
// interval ms, mode ordinal, keepAliveTime ms, the Java client's clock in ms, keepState (1 or 0),
// requireExist (1 for updateRate). Returns 1, or 0 when updateRate finds no limiter.
const redissonSetOrUpdate = `
if ARGV[7] == '1' and redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local value, permits = KEYS[2], KEYS[4]
if ARGV[3] == '1' then
  value, permits = KEYS[3], KEYS[5]
end
local old = redis.call('hget', KEYS[1], 'type')
redis.call('hset', KEYS[1], 'rate', ARGV[1])
redis.call('hset', KEYS[1], 'interval', ARGV[2])
redis.call('hset', KEYS[1], 'type', ARGV[3])
redis.call('hset', KEYS[1], 'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
if old and old ~= ARGV[3] then
  redis.call('del', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
  return 1
end
if ARGV[6] == '0' then
  redis.call('del', value, permits)
  return 1
end
local rate, interval, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[5])
redis.call('zremrangebyscore', permits, 0, now - interval)
local used = 0
for _, m in ipairs(redis.call('zrange', permits, 0, -1)) do
  local _, p = struct.unpack('Bc0I', m)
  used = used + p
end
redis.call('set', value, math.max(0, rate - used))
local keep = redis.call('hget', KEYS[1], 'keepAliveTime')
if keep and tonumber(keep) > 0 then
  redis.call('pexpire', KEYS[1], keep)
  redis.call('pexpire', value, keep)
  redis.call('pexpire', permits, keep)
else
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', value, ttl)
    redis.call('pexpire', permits, ttl)
  end
end
return 1`

// redissonExpire is RedissonExpirable.expireAsync over the keys RedissonRateLimiter passes (all five):
// PEXPIRE each by ARGV[1] ms (with ARGV[2], an option, when not empty); 1 when any was set.
const redissonExpire = `
local result = 0
for j = 1, #KEYS do
  local set
  if ARGV[2] ~= '' then
    set = redis.call('pexpire', KEYS[j], ARGV[1], ARGV[2])
  else
    set = redis.call('pexpire', KEYS[j], ARGV[1])
  end
  if set == 1 then
    result = 1
  end
end
return result`

// redissonClearExpire is RedissonExpirable.clearExpireAsync over the same keys: PERSIST each.
const redissonClearExpire = `
local result = 0
for j = 1, #KEYS do
  if redis.call('persist', KEYS[j]) == 1 then
    result = 1
  end
end
return result`

func (j *javaLimiter) int(src string, keys []string, args ...string) int64 {
	j.t.Helper()
	n, err := j.eval(src, keys, args...).AsInt64()
	require.NoError(j.t, err)
	return n
}

// release is RRateLimiter.release(permits): 0 sends nothing, as Redisson's.
func (j *javaLimiter) release(permits int64) error {
	if permits == 0 {
		return nil
	}
	err := j.eval(redissonRelease, j.keys, strconv.FormatInt(permits, 10)).Error()
	if rueidis.IsRedisNil(err) {
		return nil // EVAL_VOID: the script returns nothing
	}
	return err
}

// setOrUpdate is setRate(args) (update false) or updateRate(args) (update true).
func (j *javaLimiter) setOrUpdate(cfg ratelimit.Config, keepState, update bool) bool {
	b := map[bool]string{false: "0", true: "1"}
	return j.int(redissonSetOrUpdate, j.keys, strconv.FormatInt(cfg.Rate, 10), strconv.FormatInt(cfg.Interval.Milliseconds(), 10),
		strconv.Itoa(int(cfg.Type)), strconv.FormatInt(cfg.KeepAlive.Milliseconds(), 10),
		strconv.FormatInt(time.Now().UnixMilli(), 10), b[keepState], b[update]) == 1
}

func (j *javaLimiter) expire(ttl time.Duration) bool {
	return j.int(redissonExpire, j.keys, strconv.FormatInt(ttl.Milliseconds(), 10), "") == 1
}

func (j *javaLimiter) clearExpire() bool { return j.int(redissonClearExpire, j.keys) == 1 }

// remainTimeToLive is RedissonObject's: PTTL of the limiter's hash alone.
func (j *javaLimiter) remainTimeToLive() int64 {
	n, err := j.rdb.Do(context.Background(), j.rdb.B().Pttl().Key(j.keys[0]).Build()).AsInt64()
	require.NoError(j.t, err)
	return n
}

// snapshot renders what Redis holds under a limiter's five keys, comparable between two names: the
// hash's fields, the value, the grants' permits (sorted) and each key's TTL to the minute
// (-1 none, -2 no key).
func snapshot(t testing.TB, rdb rueidis.Client, keys []string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for i, key := range keys {
		ms, err := rdb.Do(ctx, rdb.B().Pttl().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		if ms > 0 {
			ms = (ms + 30_000) / 60_000 // minutes, rounded
		}
		what := ""
		switch i {
		case 0:
			f, err := rdb.Do(ctx, rdb.B().Hgetall().Key(key).Build()).AsStrMap()
			require.NoError(t, err)
			what = fmt.Sprint(f)
		case 1, 2:
			v, err := rdb.Do(ctx, rdb.B().Get().Key(key).Build()).ToString()
			if !rueidis.IsRedisNil(err) {
				require.NoError(t, err)
			}
			what = v
		default:
			zs, err := rdb.Do(ctx, rdb.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
			require.NoError(t, err)
			var ps []int64
			for _, m := range zs {
				ps = append(ps, unpack(t, m))
			}
			slices.Sort(ps) // grants of one ms are in the order of their random ids
			what = fmt.Sprint(ps)
		}
		fmt.Fprintf(&b, "[%d] %s ttl %d; ", i, what, ms)
	}
	return b.String()
}

// pair is one scenario run twice, on a limiter that Redisson's script changes and on one that Go's
// call changes, with the same Redisson instance id, so that the two leave comparable keys.
type pair struct {
	java   *javaLimiter
	goSide *ratelimit.Limiter
	goJava *javaLimiter // Redisson's scripts on the Go side's limiter
	rdb    rueidis.Client
}

const javaID = "2d7c0a1e-java-instance"

func newPair(t *testing.T, tg *testkit.Target, c *redisync.Client, prefix string) *pair {
	rdb := tg.Redis(t)
	a, b := unique(prefix+"-java"), unique(prefix+"-go")
	l, err := ratelimit.New(c, b, ratelimit.WithClientID(javaID))
	require.NoError(t, err)
	return &pair{java: newJava(t, rdb, a, javaID), goSide: l, goJava: newJava(t, rdb, b, javaID), rdb: rdb}
}

// both runs the same set-up on both limiters, with Redisson's scripts.
func (p *pair) both(setup func(j *javaLimiter)) {
	setup(p.java)
	setup(p.goJava)
}

// same requires that both limiters hold the same.
func (p *pair) same(t *testing.T, after string) {
	t.Helper()
	java, goSide := snapshot(t, p.rdb, p.java.keys), snapshot(t, p.rdb, p.goJava.keys)
	require.Equal(t, java, goSide, "after %s, Redisson's script (first) and Go's call (second) leave different keys", after)
}

func (p *pair) cleanup(t *testing.T) {
	for _, j := range []*javaLimiter{p.java, p.goJava} {
		testkit.Do(t, p.rdb, append([]string{"DEL"}, j.keys...)...)
	}
}

// TestRedissonInteropRelease: Go's Release and Redisson's release leave the same keys, Overall and
// PerClient, with and without a keep-alive; each side takes the permits the other gave back.
func TestRedissonInteropRelease(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		ctx := context.Background()
		for _, cfg := range []ratelimit.Config{
			{Rate: 10, Interval: time.Hour},
			{Type: ratelimit.PerClient, Rate: 10, Interval: time.Hour},
			{Rate: 10, Interval: time.Hour, KeepAlive: 2 * time.Hour},
		} {
			p := newPair(t, tg, c, "interop-release")
			p.both(func(j *javaLimiter) {
				require.True(t, j.setOrUpdate(cfg, false, false))
				j.acquire(3)
				j.acquire(4)
			})
			require.NoError(t, p.java.release(2))
			require.NoError(t, p.goSide.Release(ctx, 2))
			p.same(t, fmt.Sprintf("%+v, 7 taken, 2 released", cfg))
			require.NoError(t, p.java.release(50))
			require.NoError(t, p.goSide.Release(ctx, 50))
			p.same(t, "a release above the rate")

			// Each side takes what the other gave back.
			p.goJava.acquire(10)
			require.ErrorIs(t, p.goSide.TryAcquire(ctx, 1, 0), redisync.ErrNotAcquired)
			require.NoError(t, p.goSide.Release(ctx, 4))
			ok, _ := p.goJava.tryAcquire(4)
			require.True(t, ok, "Redisson's script did not take the 4 permits Go released")
			require.NoError(t, p.goJava.release(3))
			require.NoError(t, p.goSide.TryAcquire(ctx, 3, 0), "Go did not take the 3 permits Redisson released")
			p.cleanup(t)
		}
		// Neither releases on a limiter that is not set.
		p := newPair(t, tg, c, "interop-release-unset")
		require.ErrorContains(t, p.java.release(1), "RateLimiter is not initialized")
		require.ErrorIs(t, p.goSide.Release(ctx, 1), redisync.ErrNotInitialized)
		p.same(t, "a release without a rate")
	})
}

// TestRedissonInteropUpdateRate: Go's SetRate and UpdateRate, with and without KeepState, and
// Redisson's setRate(args) and updateRate(args) leave the same keys over the same window: a rate that
// grows, one that shrinks below what was taken, a shorter interval, a change of type, a keep-alive,
// a limiter that is not set. Each side then acquires from what the other changed.
func TestRedissonInteropUpdateRate(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		ctx := context.Background()
		base := ratelimit.Config{Rate: 10, Interval: time.Hour}
		cases := []struct {
			name         string
			cfg          ratelimit.Config
			keep, update bool
		}{
			{"grow", ratelimit.Config{Rate: 20, Interval: time.Hour}, true, true},
			{"shrink below the taken", ratelimit.Config{Rate: 5, Interval: time.Hour}, true, true},
			{"shrink to what is left", ratelimit.Config{Rate: 8, Interval: time.Hour}, true, false},
			{"shorter interval", ratelimit.Config{Rate: 10, Interval: 30 * time.Millisecond}, true, true},
			{"keep-alive", ratelimit.Config{Rate: 12, Interval: time.Hour, KeepAlive: 3 * time.Hour}, true, true},
			{"type change", ratelimit.Config{Type: ratelimit.PerClient, Rate: 10, Interval: time.Hour}, true, true},
			{"no keepState", ratelimit.Config{Rate: 6, Interval: time.Hour}, false, true},
			{"setRate without keepState", ratelimit.Config{Rate: 6, Interval: time.Hour}, false, false},
		}
		for _, tc := range cases {
			p := newPair(t, tg, c, "interop-update")
			var newest int64
			p.both(func(j *javaLimiter) {
				require.True(t, j.setOrUpdate(base, false, false))
				j.acquire(4)
				j.acquire(2)
				j.acquire(1)
				for _, g := range readWindow(t, p.rdb, j.keys[1], j.keys[3]).grants {
					newest = max(newest, g.at)
				}
			})
			testkit.Do(t, p.rdb, "PEXPIRE", p.java.keys[0], "600000")
			testkit.Do(t, p.rdb, "PEXPIRE", p.goJava.keys[0], "600000")
			if tc.cfg.Interval < time.Second {
				// The grants older than the new interval leave the window: wait until they are.
				testkit.Eventually(t, 5*time.Second, func() error {
					if serverMs(t, p.rdb) <= newest+tc.cfg.Interval.Milliseconds() {
						return errors.New("the grants are not older than the new interval yet")
					}
					return nil
				})
			}
			javaOK := p.java.setOrUpdate(tc.cfg, tc.keep, tc.update)
			var opts []ratelimit.SetOption
			if tc.keep {
				opts = append(opts, ratelimit.KeepState())
			}
			goOK := true
			var err error
			if tc.update {
				goOK, err = p.goSide.UpdateRate(ctx, tc.cfg, opts...)
			} else {
				err = p.goSide.SetRate(ctx, tc.cfg, opts...)
			}
			require.NoError(t, err)
			require.Equal(t, javaOK, goOK, tc.name)
			p.same(t, tc.name)

			// Go acquires from Redisson's change, Redisson from Go's, as far as each one's window goes.
			n, err := p.goSide.Available(ctx)
			require.NoError(t, err)
			javaLeft, _ := strconv.ParseInt(testkit.DoString(t, p.rdb, "GET", valueKey(p.java, tc.cfg)), 10, 64)
			if tc.keep && tc.cfg.Type == base.Type {
				require.Equal(t, javaLeft, n, "%s: Go counts another window than Redisson's script made", tc.name)
			}
			l, err := ratelimit.New(c, p.java.keys[0], ratelimit.WithClientID(javaID))
			require.NoError(t, err)
			if n > 0 {
				require.NoError(t, l.TryAcquire(ctx, n, 0), "%s: Go did not take the %d permits Redisson's change left", tc.name, n)
				ok, _ := p.goJava.tryAcquire(n)
				require.True(t, ok, "%s: Redisson's script did not take the %d permits Go's change left", tc.name, n)
			}
			if tc.cfg.Interval >= time.Second { // else the grants may have left the window already
				require.ErrorIs(t, l.TryAcquire(ctx, 1, 0), redisync.ErrNotAcquired, tc.name)
				ok, _ := p.goJava.tryAcquire(1)
				require.False(t, ok, "%s: Redisson's script took a permit beyond the rate", tc.name)
			}
			p.cleanup(t)
		}
		// updateRate of a limiter that is not set: false, and nothing is created.
		p := newPair(t, tg, c, "interop-update-unset")
		require.False(t, p.java.setOrUpdate(base, true, true))
		ok, err := p.goSide.UpdateRate(ctx, base, ratelimit.KeepState())
		require.NoError(t, err)
		require.False(t, ok)
		p.same(t, "updateRate without a limiter")
		require.Contains(t, snapshot(t, p.rdb, p.goJava.keys), "[0] map[] ttl -2")
	})
}

// valueKey is the value key of cfg's type among a Redisson limiter's keys.
func valueKey(j *javaLimiter, cfg ratelimit.Config) string {
	if cfg.Type == ratelimit.PerClient {
		return j.keys[2]
	}
	return j.keys[1]
}

// TestRedissonInteropExpire: Go's Expire and ClearExpire and Redisson's expire and clearExpire cover
// the same five keys to the same effect and answer the same; Go's TTL is Redisson's
// remainTimeToLive, both ways.
func TestRedissonInteropExpire(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		ctx := context.Background()
		p := newPair(t, tg, c, "interop-expire")
		defer p.cleanup(t)

		ok, err := p.goSide.Expire(ctx, time.Hour)
		require.NoError(t, err)
		require.Equal(t, p.java.expire(time.Hour), ok, "expire of nothing")
		ttl, err := p.goSide.TTL(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(-2), p.java.remainTimeToLive())
		require.Zero(t, ttl, "TTL of nothing: Redisson's remainTimeToLive is -2")

		p.both(func(j *javaLimiter) {
			require.True(t, j.setOrUpdate(ratelimit.Config{Rate: 5, Interval: time.Hour}, false, false))
			j.acquire(2)
			// Redisson's PerClient window of this instance, left from an earlier type.
			testkit.Do(t, p.rdb, "SET", j.keys[2], "3")
		})
		ok, err = p.goSide.Expire(ctx, 2*time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, p.java.expire(2*time.Hour))
		p.same(t, "expire(2h)")
		ttl, err = p.goSide.TTL(ctx)
		require.NoError(t, err)
		ms := p.goJava.remainTimeToLive()
		require.InDelta(t, float64(ms), float64(ttl.Milliseconds()), 1000, "Go's TTL %v, Redisson's remainTimeToLive %d", ttl, ms)

		// Redisson's expire read by Go's TTL.
		goJavaSide := newJava(t, p.rdb, p.goSide.Name(), javaID)
		require.True(t, goJavaSide.expire(30*time.Minute))
		ttl, err = p.goSide.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 29*time.Minute && ttl <= 30*time.Minute, "TTL after Redisson's expire(30m) = %v", ttl)

		ok, err = p.goSide.ClearExpire(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, p.java.clearExpire())
		p.same(t, "clearExpire")
		ttl, err = p.goSide.TTL(ctx)
		require.NoError(t, err)
		require.EqualValues(t, -1, ttl)
		require.Equal(t, int64(-1), p.goJava.remainTimeToLive())
		ok, err = p.goSide.ClearExpire(ctx)
		require.NoError(t, err)
		require.Equal(t, p.java.clearExpire(), ok, "a second clearExpire")
		require.False(t, ok)
	})
}
