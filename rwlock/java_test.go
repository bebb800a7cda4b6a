package rwlock_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/testkit"
)

// javaRW plays a Redisson 3.x/4.x process using RReadWriteLock on one name: Redisson's scripts
// (written here from RedissonReadLock's and RedissonWriteLock's protocol), sent with Redisson's keys
// and arguments. Threads are numbered; a reader's field is "<client id>:<thread>", a writer's that
// and ":write".
type javaRW struct {
	t     testing.TB
	j     *testkit.Java
	name  string
	id    string
	lease time.Duration // internalLockLeaseTime: the watchdog's 30 s, or lock(leaseTime)'s
}

func newJavaRW(t testing.TB, tg *testkit.Target, name string) *javaRW {
	return &javaRW{t: t, j: tg.Java(t), name: name, lease: 30 * time.Second,
		id: "3a9e5c71-java-4f0d-b6c2-" + strconv.FormatInt(time.Now().UnixNano()%1e12, 10)}
}

// Redisson's RedissonObject.prefixName and suffixName.
func (r *javaRW) prefixed(prefix string) string {
	if strings.Contains(r.name, "{") {
		return prefix + ":" + r.name
	}
	return prefix + ":{" + r.name + "}"
}

func (r *javaRW) suffixed(suffix string) string { return r.keyPrefix() + ":" + suffix }

// keyPrefix is what RedissonReadLock's getKeyPrefix leaves of suffixName(N, field): the part before
// ":<field>", which the read unlock puts before each reader's lease keys.
func (r *javaRW) keyPrefix() string {
	if strings.Contains(r.name, "{") {
		return r.name
	}
	return "{" + r.name + "}"
}

func (r *javaRW) field(thread int64) string { return r.id + ":" + strconv.FormatInt(thread, 10) }
func (r *javaRW) channel() string           { return r.prefixed("redisson_rwlock") }

// leases is RedissonReadLock's getReadWriteTimeoutNamePrefix: ":<k>" follows for the k-th read hold.
func (r *javaRW) leases(thread int64) string { return r.suffixed(r.field(thread)) + ":rwlock_timeout" }

func (r *javaRW) latch() string {
	return r.prefixed("redisson_unlock_latch") + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// RedissonReadLock's tryLockInnerAsync: nil when acquired, else the lock's PTTL.
const javaReadLock = `
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local key = KEYS[2] .. ':' .. ind
  redis.call('set', key, 1)
  redis.call('pexpire', key, ARGV[1])
  local remainTime = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])`

// RedissonReadLock's unlockInnerAsync: the lock's PTTL becomes the longest read lease left.
const javaReadUnlock = `
local val = redis.call('get', KEYS[5])
if val ~= false then return tonumber(val) end
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('set', KEYS[5], 1, 'px', ARGV[4])
  return nil
end
local lockExists = redis.call('hexists', KEYS[1], ARGV[2])
if (lockExists == 0) then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]) end
redis.call('del', KEYS[3] .. ':' .. (counter+1))
if (redis.call('hlen', KEYS[1]) > 1) then
  local maxRemainTime = -3
  local keys = redis.call('hkeys', KEYS[1])
  for n, key in ipairs(keys) do
    counter = tonumber(redis.call('hget', KEYS[1], key))
    if type(counter) == 'number' then
      for i=counter, 1, -1 do
        local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i)
        maxRemainTime = math.max(remainTime, maxRemainTime)
      end
    end
  end
  if maxRemainTime > 0 then
    redis.call('pexpire', KEYS[1], maxRemainTime)
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1`

// RedissonWriteLock's tryLockInnerAsync: nil when acquired, else the lock's PTTL. A re-entry adds
// the lease to the PTTL.
const javaWriteLock = `
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if (mode == 'write') then
  if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local currentExpire = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], currentExpire + ARGV[1])
    return nil
  end
end
return redis.call('pttl', KEYS[1])`

// RedissonWriteLock's unlockInnerAsync: the last write hold publishes 1 (wake all).
const javaWriteUnlock = `
local val = redis.call('get', KEYS[3])
if val ~= false then return tonumber(val) end
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return nil
end
if (mode == 'write') then
  local lockExists = redis.call('hexists', KEYS[1], ARGV[3])
  if (lockExists == 0) then
    return nil
  else
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
    if (counter > 0) then
      redis.call('pexpire', KEYS[1], ARGV[2])
      redis.call('set', KEYS[3], 0, 'px', ARGV[5])
      return 0
    else
      redis.call('hdel', KEYS[1], ARGV[3])
      if (redis.call('hlen', KEYS[1]) == 1) then
        redis.call('del', KEYS[1])
        redis.call(ARGV[4], KEYS[2], ARGV[1])
      else
        redis.call('hset', KEYS[1], 'mode', 'read')
      end
      redis.call('set', KEYS[3], 1, 'px', ARGV[5])
      return 1
    end
  end
end
return nil`

// javaExpire is RExpirable.expire(duration) of either side, as Redisson sends it: a PEXPIRE of the
// lock's hash alone (the read leases keep theirs), whoever holds it.
const javaExpire = `
local result = 0
for j = 1, #KEYS, 1 do
  local expireSet
  if ARGV[2] ~= '' then
    expireSet = redis.call('pexpire', KEYS[j], ARGV[1], ARGV[2])
  else
    expireSet = redis.call('pexpire', KEYS[j], ARGV[1])
  end
  if expireSet == 1 then
    result = expireSet
  end
end
return result`

// tryRead runs Redisson's read acquisition once for thread: acquired, or the PTTL it reads.
func (r *javaRW) tryRead(thread int64) (bool, int64) {
	return r.answer(r.j.Eval(javaReadLock, []string{r.name, r.leases(thread)},
		ms(r.lease), r.field(thread), r.field(thread)+":write"))
}

// tryWrite runs Redisson's write acquisition once for thread: acquired, or the PTTL it reads.
func (r *javaRW) tryWrite(thread int64) (bool, int64) {
	return r.answer(r.j.Eval(javaWriteLock, []string{r.name}, ms(r.lease), r.field(thread)+":write"))
}

func (r *javaRW) answer(m rueidis.RedisMessage) (bool, int64) {
	r.t.Helper()
	if m.IsNil() {
		return true, 0
	}
	ttl, err := m.AsInt64()
	if err != nil {
		r.t.Fatalf("a Java acquisition answered %v", err)
	}
	return false, ttl
}

func (r *javaRW) unlockRead(thread int64) {
	r.j.Eval(javaReadUnlock, []string{r.name, r.channel(), r.leases(thread), r.keyPrefix(), r.latch()},
		"0", r.field(thread), r.j.PublishCommand(), "60000")
}

func (r *javaRW) unlockWrite(thread int64) {
	r.j.Eval(javaWriteUnlock, []string{r.name, r.channel(), r.latch()},
		"1", ms(r.lease), r.field(thread)+":write", r.j.PublishCommand(), "60000")
}

// expire is RExpirable.expire(d) on the lock.
func (r *javaRW) expire(d time.Duration) { r.j.Eval(javaExpire, []string{r.name}, ms(d), "") }
