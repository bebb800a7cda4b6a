package ratelimit_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
)

// redissonTrySetRate is RedissonRateLimiter.trySetRate's script as its protocol describes it: HSETNX
// of the four fields, PEXPIRE by the keep-alive when it set them. KEYS[1] the limiter; ARGV rate,
// interval ms, type ordinal, keepAliveTime ms.
const redissonTrySetRate = `
redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])
local set = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
if set == 1 and tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
return set`

// redissonAcquire is RedissonRateLimiter's acquiring script as its protocol describes it, with its
// keys (the limiter, the value, the client's value, the permits, the client's permits) and
// arguments (permits, the Java client's clock in ms, a random 16-byte id). It decodes and encodes
// grants with the struct library, as Redisson does. Returns nil when acquired, else the ms to wait.
const redissonAcquire = `
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
assert(rate and interval and kind, 'RateLimiter is not initialized')
local value, permits = KEYS[2], KEYS[4]
if kind == '1' then
  value, permits = KEYS[3], KEYS[5]
end
assert(tonumber(rate) >= tonumber(ARGV[1]), 'Requested permits amount cannot exceed defined rate')
local now = tonumber(ARGV[2])
local current = redis.call('get', value)
local wait = nil
if current then
  local released = 0
  for _, m in ipairs(redis.call('zrangebyscore', permits, 0, now - interval)) do
    local _, p = struct.unpack('Bc0I', m)
    released = released + p
  end
  if released > 0 then
    redis.call('zremrangebyscore', permits, 0, now - interval)
    if tonumber(current) + released > tonumber(rate) then
      local used = 0
      for _, m in ipairs(redis.call('zrange', permits, 0, -1)) do
        local _, p = struct.unpack('Bc0I', m)
        used = used + p
      end
      current = tonumber(rate) - used
    else
      current = tonumber(current) + released
    end
    redis.call('set', value, current)
  end
  if tonumber(current) < tonumber(ARGV[1]) then
    local oldest = redis.call('zrange', permits, 0, 0, 'withscores')
    wait = 3 + interval - (now - tonumber(oldest[2]))
  else
    redis.call('zadd', permits, ARGV[2], struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1]))
    redis.call('decrby', value, ARGV[1])
  end
else
  redis.call('set', value, rate)
  redis.call('zadd', permits, ARGV[2], struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1]))
  redis.call('decrby', value, ARGV[1])
end
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
return wait`

// javaLimiter runs Redisson's scripts on a limiter as a Redisson instance with id javaID would.
type javaLimiter struct {
	t    *testing.T
	rdb  rueidis.Client
	keys []string
}

func newJava(t *testing.T, rdb rueidis.Client, name, javaID string) *javaLimiter {
	return &javaLimiter{t: t, rdb: rdb, keys: []string{name, "{" + name + "}:value", "{" + name + "}:value:" + javaID,
		"{" + name + "}:permits", "{" + name + "}:permits:" + javaID}}
}

func (j *javaLimiter) eval(src string, keys []string, args ...string) rueidis.RedisResult {
	return j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

func (j *javaLimiter) trySetRate(typ, rate, intervalMs int64) bool {
	n, err := j.eval(redissonTrySetRate, j.keys[:1], strconv.FormatInt(rate, 10), strconv.FormatInt(intervalMs, 10),
		strconv.FormatInt(typ, 10), "0").AsInt64()
	if err != nil {
		j.t.Fatal(err)
	}
	return n == 1
}

// tryAcquire reports whether permits were taken, or how long Redisson would wait.
func (j *javaLimiter) tryAcquire(permits int64) (bool, time.Duration) {
	id := make([]byte, 16)
	rand.Read(id)
	res := j.eval(redissonAcquire, j.keys, strconv.FormatInt(permits, 10), strconv.FormatInt(time.Now().UnixMilli(), 10), string(id))
	wait, err := res.AsInt64()
	if rueidis.IsRedisNil(err) {
		return true, 0
	}
	if err != nil {
		j.t.Fatal(err)
	}
	return false, time.Duration(wait) * time.Millisecond
}

// acquire waits as Redisson does: it sleeps what the script answered, then tries again.
func (j *javaLimiter) acquire(permits int64) {
	for range 100 {
		ok, wait := j.tryAcquire(permits)
		if ok {
			return
		}
		time.Sleep(wait)
	}
	j.t.Fatalf("Redisson's script did not grant %d permits in 100 tries", permits)
}

// TestRedissonInterop: a Go limiter and Redisson's scripts, with Redisson's keys and arguments, share
// one rate both ways: each sees the other's grants, decodes them, and gets them back when they leave
// the window.
func TestRedissonInterop(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		c := tg.Client(t)
		ctx := context.Background()
		name := unique("interop")
		java := newJava(t, rdb, name, "2d7c0a1e-java-instance")
		l, err := ratelimit.New(c, name)
		if err != nil {
			t.Fatal(err)
		}
		const interval = 600 * time.Millisecond
		if !java.trySetRate(0, 10, interval.Milliseconds()) {
			t.Fatal("Redisson's trySetRate did not set the rate")
		}
		if ok, err := l.TrySetRate(ctx, overall(3, time.Second)); ok || err != nil {
			t.Fatalf("TrySetRate over Redisson's = %v, %v", ok, err)
		}
		if cfg, err := l.Config(ctx); cfg != overall(10, interval) || err != nil {
			t.Fatalf("Config = %+v, %v", cfg, err)
		}
		consistent := func(when string) {
			w := readWindow(t, rdb, "{"+name+"}:value", "{"+name+"}:permits")
			v, _ := strconv.ParseInt(w.value, 10, 64)
			if v+w.used() != 10 {
				t.Errorf("%s: value %d + grants %d != rate 10", when, v, w.used())
			}
		}

		if ok, _ := java.tryAcquire(4); !ok {
			t.Fatal("Java: 4 of 10 not granted")
		}
		if n, err := l.Available(ctx); n != 6 || err != nil {
			t.Fatalf("Go sees %d available after Java took 4 (%v), want 6", n, err)
		}
		if err := l.TryAcquire(ctx, 7, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("Go took 7 when 6 were left: %v", err)
		}
		if err := l.TryAcquire(ctx, 6, 0); err != nil {
			t.Fatal(err)
		}
		consistent("after Java's 4 and Go's 6")
		// Redisson's script decodes Go's grant (struct.unpack) and answers a wait.
		if ok, wait := java.tryAcquire(1); ok || wait <= 0 || wait > interval+3*time.Millisecond {
			t.Fatalf("Java: granted %v, wait %v, with the window full", ok, wait)
		}
		// Go waits for Java's 4 to leave the window, then takes them.
		if err := l.Acquire(ctx, 4); err != nil {
			t.Fatal(err)
		}
		consistent("after Go took Java's 4 back")
		// Java waits (Redisson's way) for Go's 6 and takes them: it decoded and returned Go's grant.
		java.acquire(6)
		consistent("after Java took Go's 6")
		if err := l.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("Go took a permit in a full window: %v", err)
		}
		if _, err := l.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
