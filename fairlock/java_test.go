package fairlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// javaFair plays a Redisson 3.x/4.x process using RFairLock on one name: Redisson's scripts (written
// here from RedissonFairLock's protocol), with its arguments, keys, channels and messages, and its
// waiting loop (RedissonLock.lock / tryLock). Threads are numbered; the owner field is
// "<client id>:<thread>".
type javaFair struct {
	t       testing.TB
	rdb     rueidis.Client
	cluster bool
	name    string
	id      string
	wait    time.Duration // threadWaitTime: Config.fairLockWaitTimeout, 5 minutes by default
	lease   time.Duration // internalLockLeaseTime: Config.lockWatchdogTimeout, 30 s by default
}

func newJavaFair(t testing.TB, tg *testkit.Target, name string) *javaFair {
	return &javaFair{t: t, rdb: tg.Redis(t), cluster: tg.Name == "cluster", name: name,
		id:   "8d6f3a52-java-4c1e-9e8b-" + strconv.FormatInt(time.Now().UnixNano()%1e12, 10),
		wait: 5 * time.Minute, lease: 30 * time.Second}
}

func (j *javaFair) field(thread int64) string { return j.id + ":" + strconv.FormatInt(thread, 10) }
func (j *javaFair) queue() string             { return "redisson_lock_queue:{" + j.name + "}" }
func (j *javaFair) timeouts() string          { return "redisson_lock_timeout:{" + j.name + "}" }
func (j *javaFair) channel() string           { return "redisson_lock__channel:{" + j.name + "}" }

// slot is what a Java acquisition uses as its wait slot: tryLock's waitTime when given, else
// threadWaitTime.
func (j *javaFair) slot(waitTime time.Duration) string {
	if waitTime > 0 {
		return ms(waitTime)
	}
	return ms(j.wait)
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func nowMs() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// Redisson's tryLockInnerAsync for RFairLock, the EVAL_LONG variant: nil when acquired, else the
// time to wait.
const javaFairAcquire = `
while true do
  local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
  if firstThreadId2 == false then break end
  local timeout = redis.call('zscore', KEYS[3], firstThreadId2)
  if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], firstThreadId2)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0)
    or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local keys = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #keys, 1 do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i])
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
local timeout = redis.call('zscore', KEYS[3], ARGV[2])
if timeout ~= false then
  local ttl = redis.call('pttl', KEYS[1])
  return math.max(0, ttl)
end
local lastThreadId = redis.call('lindex', KEYS[2], -1)
local ttl
if lastThreadId ~= false and lastThreadId ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`

// Redisson's unlockInnerAsync for RFairLock.
const javaFairRelease = `
local val = redis.call('get', KEYS[5])
if val ~= false then return tonumber(val) end
while true do
  local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
  if firstThreadId2 == false then break end
  local timeout = redis.call('zscore', KEYS[3], firstThreadId2)
  if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], firstThreadId2)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
if (redis.call('exists', KEYS[1]) == 0) then
  local nextThreadId = redis.call('lindex', KEYS[2], 0)
  if nextThreadId ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1])
  end
  redis.call('set', KEYS[5], 1, 'px', ARGV[6])
  return 1
end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[5], 0, 'px', ARGV[6])
  return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local nextThreadId = redis.call('lindex', KEYS[2], 0)
if nextThreadId ~= false then
  redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1])
end
return 1`

// Redisson's acquireFailedAsync for RFairLock: a waiter that gives up.
const javaFairGiveUp = `
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1 end
i = i + 1
while i <= #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
  i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])`

// try runs Redisson's acquire script once: acquired, or the ttl it reports.
func (j *javaFair) try(thread int64, waitTime time.Duration) (bool, int64) {
	j.t.Helper()
	res := j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(javaFairAcquire).Numkeys(3).
		Key(j.name, j.queue(), j.timeouts()).Arg(ms(j.lease), j.field(thread), j.slot(waitTime), nowMs()).Build())
	ttl, err := res.AsInt64()
	if rueidis.IsRedisNil(err) {
		return true, 0
	}
	if err != nil {
		j.t.Errorf("java acquire: %v", err)
		return false, -1
	}
	return false, ttl
}

func (j *javaFair) unlock(thread int64) {
	j.t.Helper()
	publish := "publish"
	if j.cluster {
		publish = "spublish" // Redisson on a Redis 7 cluster uses sharded Pub/Sub
	}
	latch := "redisson_unlock_latch:{" + j.name + "}:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	err := j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(javaFairRelease).Numkeys(5).
		Key(j.name, j.queue(), j.timeouts(), j.channel(), latch).
		Arg("0", ms(j.lease), j.field(thread), nowMs(), publish, "60000").Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		j.t.Errorf("java unlock: %v", err)
	}
}

func (j *javaFair) giveUp(thread int64, waitTime time.Duration) {
	j.t.Helper()
	if err := j.rdb.Do(context.Background(), j.rdb.B().Eval().Script(javaFairGiveUp).Numkeys(2).
		Key(j.queue(), j.timeouts()).Arg(j.field(thread), j.slot(waitTime)).Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
		j.t.Errorf("java give up: %v", err)
	}
}

// lock is RedissonLock.lock() (waitTime 0) or tryLock(waitTime): a first try, then a subscription to
// the thread's own channel, then tries on every message or when the reported ttl passes. It reports
// whether it acquired.
func (j *javaFair) lock(ctx context.Context, thread int64, waitTime time.Duration) bool {
	var deadline time.Time
	if waitTime > 0 {
		deadline = time.Now().Add(waitTime)
	}
	if ok, _ := j.try(thread, waitTime); ok {
		return true
	}
	msgs, stop := j.subscribe(j.channel() + ":" + j.field(thread))
	defer stop()
	for {
		ok, ttl := j.try(thread, waitTime)
		if ok {
			return true
		}
		d := time.Duration(ttl) * time.Millisecond
		if ttl < 0 {
			d = time.Hour
		}
		// Redisson waits 0 ms on a free lock with a live head ahead (it spins); a few ms spare the CPU.
		d = max(d, 5*time.Millisecond)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				j.giveUp(thread, waitTime)
				return false
			}
			d = min(d, left)
		}
		select {
		case <-msgs:
		case <-time.After(d):
		case <-ctx.Done():
			j.giveUp(thread, waitTime)
			return false
		}
	}
}

// subscribe listens on channel as Redisson's LockPubSub does, and returns once subscribed.
func (j *javaFair) subscribe(channel string) (<-chan string, func()) {
	sub := j.rdb.B().Subscribe().Channel(channel).Build()
	if j.cluster {
		sub = j.rdb.B().Ssubscribe().Channel(channel).Build()
	}
	ctx, cancel := context.WithCancel(context.Background())
	msgs := make(chan string, 16)
	subscribed := make(chan struct{})
	done := make(chan struct{})
	hook := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if strings.HasSuffix(s.Kind, "subscribe") && !strings.Contains(s.Kind, "un") {
			select {
			case <-subscribed:
			default:
				close(subscribed)
			}
		}
	})
	go func() {
		defer close(done)
		j.rdb.Receive(hook, sub, func(m rueidis.PubSubMessage) {
			select {
			case msgs <- m.Message:
			default:
			}
		})
	}()
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		j.t.Error("java waiter could not subscribe")
	}
	return msgs, func() { cancel(); <-done }
}

// joinJava starts Java thread `thread` waiting for the lock (lock() when waitTime is 0) as who in
// ln's order; it holds for hold and unlocks.
func (ln *line) joinJava(j *javaFair, thread int64, waitTime time.Duration, who string, hold time.Duration) <-chan error {
	res := make(chan error, 1)
	ln.wg.Add(1)
	go func() {
		defer ln.wg.Done()
		if !j.lock(context.Background(), thread, waitTime) {
			res <- redisync.ErrNotAcquired
			return
		}
		ln.sec.Enter()
		ln.mu.Lock()
		ln.order = append(ln.order, who)
		ln.at[who] = time.Now()
		ln.mu.Unlock()
		time.Sleep(hold)
		ln.sec.Leave()
		j.unlock(thread)
		res <- nil
	}()
	return res
}
