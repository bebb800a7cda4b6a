package semaphore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// javaExpirable plays a Redisson 3.x/4.x process using RPermitExpirableSemaphore on one name:
// Redisson's scripts (written here from RedissonPermitExpirableSemaphore's protocol), sent with its
// keys and arguments, its clock's now and its permit ids (16 random bytes, 32 hex digits to users).
type javaExpirable struct {
	t    testing.TB
	j    *testkit.Java
	name string
}

func (s *javaExpirable) keys() []string {
	return []string{s.name, timeoutKey(s.name), channelOf(s.name)}
}

// The releases take the channel second and the permits third.
func (s *javaExpirable) releaseKeys() []string {
	return []string{s.name, channelOf(s.name), timeoutKey(s.name)}
}

func javaNow() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// RedissonPermitExpirableSemaphore.tryAcquireAsync(ids, timeoutDate): 'OK' when acquired, else
// ':<the earliest expiry>' when a permit will expire, else nil.
const javaExpirableAcquire = `
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1])
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[5], KEYS[3], value)
  end
end
local value = redis.call('get', KEYS[1])
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  redis.call('decrby', KEYS[1], ARGV[1])
  for i = 6, #ARGV, 1 do
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return 'OK'
end
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if v[1] ~= nil and v[2] ~= ARGV[4] then
  return ':' .. tostring(v[2])
end
return nil`

// RedissonPermitExpirableSemaphore.tryReleaseAsync(permitId): 1 when released before its lease
// ended.
const javaExpirableRelease = `
local expire = redis.call('zscore', KEYS[3], ARGV[1])
local removed = redis.call('zrem', KEYS[3], ARGV[1])
if tonumber(removed) ~= 1 then
  return 0
end
local value = redis.call('incrby', KEYS[1], ARGV[2])
redis.call(ARGV[4], KEYS[2], value)
if tonumber(expire) <= tonumber(ARGV[3]) then
  return 0
end
return 1`

// RedissonPermitExpirableSemaphore.tryReleaseAsync(permitsIds): the number released, none when one
// is not acquired.
const javaExpirableReleaseAll = `
for i = 4, #ARGV, 1 do
  local expire = redis.call('zscore', KEYS[3], ARGV[i])
  if expire== false or tonumber(expire) <= tonumber(ARGV[2]) then
    return 0
  end
end
local expiredIds = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[3], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[3], KEYS[2], value)
  end
end
local keys = {}
for i = 4, #ARGV, 1 do
  table.insert(keys, ARGV[i])
end
local removed = redis.call('zrem', KEYS[3], unpack(keys))
redis.call('incrby', KEYS[1], removed)
redis.call(ARGV[3], KEYS[2], removed)
return removed`

// The expired permits' return that updateLeaseTimeAsync and getLeaseTimeAsync begin with.
const javaExpirableReturn = `
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[4], KEYS[3], value)
  end
end
`

// RedissonPermitExpirableSemaphore.updateLeaseTimeAsync: 1 when the permit is acquired.
const javaExpirableUpdateLease = javaExpirableReturn + `
local value = redis.call('zscore', KEYS[2], ARGV[1])
if (value ~= false) then
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
  return 1
end
return 0`

// RedissonPermitExpirableSemaphore.getLeaseTimeAsync: ms left, -1 without expiry, 0 when not
// acquired.
const javaExpirableLeaseTime = javaExpirableReturn + `
local value = redis.call('zscore', KEYS[2], ARGV[1])
if (value ~= false) then
  return tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - tonumber(ARGV[3])
end
return 0`

// timeoutDate is Redisson's calcTimeout: now + lease, or "never".
func timeoutDate(lease time.Duration) string {
	return strconv.FormatInt(time.Now().Add(lease).UnixMilli(), 10)
}

func rawID(t testing.TB, id string) string {
	t.Helper()
	raw, err := hex.DecodeString(id)
	require.NoError(t, err)
	return string(raw)
}

// try is one tryAcquire(1) with a lease: the permit's id, or "" and the earliest expiry it reports
// (0 when none).
func (s *javaExpirable) try(lease time.Duration) (string, time.Time) {
	s.t.Helper()
	id := make([]byte, 16)
	rand.Read(id)
	m := s.j.Eval(javaExpirableAcquire, s.keys(), "1", timeoutDate(lease), javaNow(), never, s.j.PublishCommand(), string(id))
	if m.IsNil() {
		return "", time.Time{}
	}
	res, err := m.ToString()
	require.NoError(s.t, err)
	if res == "OK" {
		return hex.EncodeToString(id), time.Time{}
	}
	at, err := strconv.ParseInt(strings.TrimPrefix(res, ":"), 10, 64)
	require.NoError(s.t, err, "the nearest expiry a Java tryAcquire reads: %q", res)
	return "", time.UnixMilli(at)
}

// release is release(permitId): it fails the test unless the permit was acquired.
func (s *javaExpirable) release(id string) {
	s.t.Helper()
	require.Equal(s.t, int64(1), s.j.EvalInt(javaExpirableRelease, s.releaseKeys(), rawID(s.t, id), "1", javaNow(), s.j.PublishCommand()),
		"a Java release of permit %s", id)
}

// releaseAll is release(permitsIds): it fails the test unless every permit was acquired.
func (s *javaExpirable) releaseAll(ids ...string) {
	s.t.Helper()
	args := []string{strconv.Itoa(len(ids)), javaNow(), s.j.PublishCommand()}
	for _, id := range ids {
		args = append(args, rawID(s.t, id))
	}
	require.Equal(s.t, int64(len(ids)), s.j.EvalInt(javaExpirableReleaseAll, s.releaseKeys(), args...), "a Java release of permits %v", ids)
}

// leaseTime is getLeaseTime(permitId).
func (s *javaExpirable) leaseTime(id string) time.Duration {
	s.t.Helper()
	ms := s.j.EvalInt(javaExpirableLeaseTime, s.keys(), rawID(s.t, id), never, javaNow(), s.j.PublishCommand())
	require.NotZero(s.t, ms, "a Java getLeaseTime of permit %s: not acquired", id)
	return time.Duration(ms) * time.Millisecond
}

// updateLease is updateLeaseTime(permitId, lease).
func (s *javaExpirable) updateLease(id string, lease time.Duration) {
	s.t.Helper()
	require.Equal(s.t, int64(1), s.j.EvalInt(javaExpirableUpdateLease, s.keys(), rawID(s.t, id), timeoutDate(lease), javaNow(), s.j.PublishCommand()),
		"a Java updateLeaseTime of permit %s", id)
}

// Permits taken with a lease of their own by either side are seen by the other with that lease:
// Redisson's getLeaseTime and its tryAcquire's earliest expiry read a Go AcquireFor's, Go's
// LeaseLeft reads a Java tryAcquire(waitTime, leaseTime)'s, and a new lease given by one side is
// what the other reads. A permit released by the other side wakes the waiter of the first: a Go
// TryAcquireFor then holds with its own lease, a Java acquire(leaseTime) with its own, and the
// end of a Java lease hands its permit to a Go TryAcquireFor. Everything released, the semaphore
// holds its permits in all and no permit is left.
func TestJavaLeaseOfTheCall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		rdb := tg.Redis(t)
		name := unique("java-lease")
		java := &javaExpirable{t: t, j: tg.Java(t), name: name}
		c := tg.Client(t, slow) // only messages and the earliest lease move the Go waiters
		e := newExpirable(t, c, name)
		_, err := e.TrySetPermits(ctx, 2)
		require.NoError(t, err)

		g1, err := e.AcquireFor(ctx, 1, 10*time.Second)
		require.NoError(t, err)
		left := java.leaseTime(g1[0])
		require.True(t, left > 0 && left <= 10*time.Second, "the lease a Java getLeaseTime reads of a Go AcquireFor(1, 10 s): %v", left)
		j1, _ := java.try(time.Minute) // tryAcquire(wait, 1 min): a permit is available
		require.NotEmpty(t, j1, "a Java tryAcquire of the permit left")
		left, err = e.LeaseLeft(ctx, j1)
		require.NoError(t, err)
		require.True(t, left > 59*time.Second && left <= time.Minute, "the lease Go reads of a Java tryAcquire(…, 1 min): %v", left)

		// None left: Java's tryAcquire reads the Go lease as the earliest expiry, a Go TryAcquireFor
		// does not wait.
		id, at := java.try(time.Hour)
		require.Empty(t, id, "a Java tryAcquire of an empty semaphore")
		require.True(t, at.After(time.Now()) && at.Before(time.Now().Add(10*time.Second)), "the earliest expiry a Java tryAcquire reads: %v", at)
		_, err = e.TryAcquireFor(ctx, 1, 0, time.Hour)
		require.ErrorIs(t, err, redisync.ErrNotAcquired, "a Go TryAcquireFor(1, 0, 1 h) of an empty semaphore")

		// A new lease by either side is what the other reads.
		require.NoError(t, e.UpdateLease(ctx, g1[0], time.Hour))
		require.Greater(t, java.leaseTime(g1[0]), 59*time.Minute, "the lease Java reads after a Go UpdateLease(1 h)")
		java.updateLease(j1, 2*time.Hour)
		left, err = e.LeaseLeft(ctx, j1)
		require.NoError(t, err)
		require.Greater(t, left, 119*time.Minute, "the lease Go reads after a Java updateLeaseTime(2 h)")

		// A Go TryAcquireFor(1, 30 s, 1 h) waits; Java releases the Go permit.
		got := make(chan error, 1)
		var g2 []string
		go func() {
			var err error
			g2, err = e.TryAcquireFor(ctx, 1, 30*time.Second, time.Hour)
			got <- err
		}()
		testkit.Eventually(t, 10*time.Second, func() error {
			if waiting(c, name) != 1 {
				return errors.New("the Go waiter is not parked")
			}
			return nil
		})
		java.release(g1[0])
		require.NoError(t, <-got, "a Go TryAcquireFor after a Java release of a Go permit")
		require.Greater(t, java.leaseTime(g2[0]), 59*time.Minute, "the lease Java reads of a Go TryAcquireFor(…, 1 h)")

		// A Java acquire(3 s) waits; Go releases the Java permit.
		sub := java.j.Subscribe(channelOf(name))
		id, at = java.try(3 * time.Second)
		require.Empty(t, id, "a Java acquire of an empty semaphore")
		require.True(t, at.After(time.Now().Add(59*time.Minute)), "the earliest expiry a Java acquire reads: %v", at)
		require.NoError(t, e.Release(ctx, j1), "a Go release of a Java permit")
		var j2 string
		sub.Until(10*time.Second, "a Java acquire(3 s) after a Go release of a Java permit", func() bool {
			j2, _ = java.try(3 * time.Second)
			return j2 != ""
		})
		if left, err := e.LeaseLeft(ctx, j2); err == nil { // a busy machine may ask after the lease
			require.LessOrEqual(t, left, 3*time.Second, "the lease Go reads of a Java acquire(3 s)")
		} else {
			require.ErrorIs(t, err, redisync.ErrNotHeld)
		}

		// The Java lease ends: its permit goes to a Go TryAcquireFor that waits, with nobody releasing.
		g3, err := e.TryAcquireFor(ctx, 1, 30*time.Second, time.Hour)
		require.NoError(t, err, "a Go TryAcquireFor when the lease of a Java permit ends")
		require.Greater(t, java.leaseTime(g3[0]), 59*time.Minute, "the lease Java reads of a Go TryAcquireFor(…, 1 h)")

		java.releaseAll(g2[0], g3[0])
		require.Equal(t, [3]int64{2, 0, 2}, counts(t, e), "available, acquired, permits after every permit came back")
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", timeoutKey(name)), "the permits key after every permit came back")
	})
}
