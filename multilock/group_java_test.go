package multilock

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// Redisson's RedissonFasterMultiLock scripts, their Lua as Redisson's source (commit 66863978) has it:
// tryLockOnceInnerAsync (tryLock() without a wait), tryLockInnerAsync (the tries of lock() and of
// tryLock with a wait), unlockInnerAsync, forceUnlockAsync, isHeldByThreadAsync, isLockedAsync, and
// the watchdog's renewal (renewal/FastMultilockTask). A Java process sends these, with the Java
// client's clock in ARGV.
const (
	javaGroupTryLockOnce = `local currentTime = tonumber(ARGV[1]);
local leaseTime = tonumber(ARGV[2]);
local currentThread = ARGV[3];
local keyExist = nil;
if (redis.call('exists',KEYS[1]) > 0) then
   keyExist = 1;
   for i=4, #ARGV, 1 do
       local lockThread = redis.call('hget', KEYS[1], ARGV[i]);
       if(lockThread ~= false and currentThread ~= lockThread ) then
           local expireFieldName = ARGV[i]..':'..lockThread..':expire_time'
           local expireTime = redis.call('hget', KEYS[1], expireFieldName);
           if( tonumber(expireTime) > currentTime and currentThread ~= lockThread) then
               return 0;
           end
       end;
   end;
else
   keyExist = 0;
end;
for i=4, #ARGV, 1 do
   redis.call('hset', KEYS[1], ARGV[i], currentThread);
   local expireFieldName = ARGV[i]..':'..currentThread..':expire_time'
   local expireTime = redis.call('hget', KEYS[1], expireFieldName);
   local newExpireTime = leaseTime + currentTime
   if(expireTime == false or tonumber(expireTime) < newExpireTime ) then
      redis.call('hset', KEYS[1], expireFieldName, newExpireTime);
   end;
   redis.call('HINCRBY', KEYS[1], ARGV[i]..':'..currentThread..':lock_count', 1);
end;
if(keyExist == 1) then
   local expireTime = redis.call('pttl',KEYS[1]);
   if(tonumber(expireTime) > 0 and leaseTime > tonumber(expireTime)) then
       redis.call('pexpire',KEYS[1], leaseTime);
   end;
else
    redis.call('pexpire',KEYS[1], leaseTime);
end;
return 1;`
	javaGroupTryLock = `local leaseTime = tonumber(ARGV[1]);
local currentTime = tonumber(ARGV[2]);
local currentThread = ARGV[3];
local maxExpireTime = -1;
local keyExist = nil;
if (tonumber(redis.call('exists',KEYS[1])) > 0) then
   keyExist = 1;
   for i=4, #ARGV, 1 do
       local lockThread = redis.call('hget', KEYS[1], ARGV[i]);
       if(lockThread ~= false and lockThread ~= currentThread) then
           local expireFieldName = ARGV[i]..':'..lockThread..':expire_time';
           local expireTime = redis.call('hget', KEYS[1], expireFieldName);
           if(expireTime ~= false and tonumber(expireTime) > currentTime ) then
               if(tonumber(expireTime) > maxExpireTime) then
                   maxExpireTime = tonumber(expireTime);
               end;
           end
       end;
   end;
else
   keyExist = 0;
end;
if( maxExpireTime ~= -1) then
   return maxExpireTime-currentTime;
end;
for i=4, #ARGV, 1 do
   redis.call('hset', KEYS[1], ARGV[i], currentThread);
   local expireFieldName = ARGV[i]..':'..currentThread..':expire_time'
   local expireTime = redis.call('hget', KEYS[1], expireFieldName);
   local newExpireTime = leaseTime + currentTime
   if(expireTime == false or tonumber(expireTime) < newExpireTime ) then
      redis.call('hset', KEYS[1], expireFieldName, newExpireTime);
   end;
   redis.call('HINCRBY', KEYS[1], ARGV[i]..':'..currentThread..':lock_count', 1);
end;
if(keyExist == 1) then
   local expireTime = redis.call('pttl',KEYS[1]);
   if(tonumber(expireTime) > 0 and leaseTime > tonumber(expireTime)) then
       redis.call('pexpire',KEYS[1], leaseTime);
   end;
else
    redis.call('pexpire',KEYS[1], leaseTime);
end;
return nil;`
	javaGroupUnlock = `local val = redis.call('get', KEYS[3]);
if val ~= false then
   return tonumber(val);
end;
if(redis.call('exists', KEYS[1]) == 0) then
   redis.call(ARGV[4], KEYS[2], ARGV[2]);
   return nil;
end;
local lockName = ARGV[1];
local hasFailed = 0;
local allDeleted = 1;
local hasDeleted = 0;
local newExpireTime = tonumber(ARGV[3]) + tonumber(ARGV[6]);
for i = 7,#ARGV,1 do
   local expireTime = redis.call('hget', KEYS[1], ARGV[i]..':'..lockName..':expire_time');
   if (expireTime ~= false and tonumber(expireTime) >= tonumber(ARGV[6])) then
       if(tonumber(redis.call('hincrby', KEYS[1], ARGV[i]..':'..lockName..':lock_count',-1)) <= 0) then
           redis.call('hdel',KEYS[1], ARGV[i]..':'..lockName..':expire_time');
           redis.call('hdel',KEYS[1], ARGV[i]..':'..lockName..':lock_count');
           redis.call('hdel',KEYS[1], ARGV[i]);
           hasDeleted = 1;
       else
           if(tonumber(expireTime) < newExpireTime) then
               redis.call('hset', KEYS[1], ARGV[i]..':'..lockName..':expire_time', newExpireTime);
           end;
           allDeleted = 0;
       end;
   else
       allDeleted = 0;
       hasFailed = 1;
   end;
end;
if(hasFailed ~= 0) then
   return nil;
end;
if(hasDeleted) then
   redis.call(ARGV[4], KEYS[2], ARGV[2]);
end;
if(allDeleted == 1) then
   redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
else
   redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
   local expireTime = redis.call('pttl',KEYS[1]);
   if(tonumber(ARGV[3]) > tonumber(expireTime)) then
       redis.call('pexpire',KEYS[1], ARGV[3]);
   end;
end;
return allDeleted;`
	javaGroupForceUnlock = `local removeCount = 0;
for i=3, #ARGV, 1 do
    local lockName = redis.call('hget', KEYS[1], ARGV[i]);
    local count = redis.call('HDEL', KEYS[1], ARGV[i]);
    redis.call('HDEL', KEYS[1], ARGV[i]..':'..lockName..':expire_time');
    redis.call('HDEL', KEYS[1], ARGV[i]..':'..lockName..':lock_count');
    removeCount = removeCount+count;
end;
redis.call(ARGV[2], KEYS[2], ARGV[1]);
return removeCount;`
	javaGroupIsHeld = `local currentTime = tonumber(ARGV[1]);
local currentThread = ARGV[2];
if (redis.call('exists',KEYS[1]) > 0) then
   for i=4, #ARGV, 1 do
       local expireTime = redis.call('hget', KEYS[1], ARGV[i]..':'..currentThread..':expire_time');
       if(expireTime == false or tonumber(expireTime) < currentTime) then
           return 0;
       end;
   end;
else
   return 0;
end;
return 1;`
	javaGroupIsLocked = `local currentTime = tonumber(ARGV[1]);
for i = 2,#ARGV,1 do
   local localThread = redis.call('hget', KEYS[1], ARGV[i]);
   if(localThread ~= false) then
       local expireTime = redis.call('hget', KEYS[1], ARGV[i]..':'..localThread..':expire_time');
       if (expireTime ~= false and tonumber(expireTime) >= currentTime) then
           return 1;
       end;
   end;
end;
return 0;`
	javaGroupRenew = `local leaseTime = tonumber(ARGV[1]);
local currentTime = tonumber(ARGV[2]);
local currentThread = ARGV[3];
if (redis.call('exists',KEYS[1]) > 0) then
   local newExpireTime = leaseTime + currentTime;
   for i=4, #ARGV, 1 do
       local lockThread = redis.call('hget', KEYS[1], ARGV[i]);
       if(lockThread ~= false and lockThread == currentThread) then
           local expireFieldName = ARGV[i]..':'..lockThread..':expire_time';
           local expireTime = redis.call('hget', KEYS[1], expireFieldName);
           if(tonumber(expireTime) < newExpireTime) then
               redis.call('hset', KEYS[1],expireFieldName, newExpireTime);
           end;
       else
           return 0;
       end;
   end;
   local expireTime = redis.call('pttl',KEYS[1]);
   if(tonumber(expireTime) < tonumber(leaseTime)) then
       redis.call('pexpire',KEYS[1], leaseTime);
   end;
   return 1;
end;
return 0;`
)

// javaGroup plays a Redisson process holding getMultiLock(group, values) with StringCodec: it runs
// Redisson's scripts with Redisson's keys and arguments.
type javaGroup struct {
	t      *testing.T
	j      *testkit.Java
	group  string
	fields []string
	id     string // the Redisson client's id: a thread's owner is "<id>:<thread id>"
}

func newJavaGroup(t *testing.T, tg *testkit.Target, group string, values ...string) *javaGroup {
	g := &javaGroup{t: t, j: tg.Java(t), group: group, id: "5d1c7e2a-java-4b8e-9f00-" + strconv.Itoa(int(groupSeq.Add(1)))}
	for _, v := range values {
		g.fields = append(g.fields, field(v))
	}
	return g
}

func (g *javaGroup) owner(thread int64) string { return g.id + ":" + strconv.FormatInt(thread, 10) }
func (g *javaGroup) channel() string           { return "redisson_lock__channel:{" + g.group + "}" }
func now() string                              { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// tryLock is one try of lock() or tryLock(wait, ...): true when acquired, else the ms Redisson waits.
func (g *javaGroup) tryLock(thread int64, lease time.Duration) (bool, int64) {
	g.t.Helper()
	m := g.j.Eval(javaGroupTryLock, []string{g.group},
		append([]string{strconv.FormatInt(lease.Milliseconds(), 10), now(), g.owner(thread)}, g.fields...)...)
	if m.IsNil() {
		return true, 0
	}
	ms, err := m.AsInt64()
	require.NoError(g.t, err)
	return false, ms
}

// tryLockOnce is tryLock() without a wait.
func (g *javaGroup) tryLockOnce(thread int64, lease time.Duration) bool {
	g.t.Helper()
	return g.j.EvalInt(javaGroupTryLockOnce, []string{g.group},
		append([]string{now(), strconv.FormatInt(lease.Milliseconds(), 10), g.owner(thread)}, g.fields...)...) == 1
}

// unlock is unlock(): held is false when Redisson would throw IllegalMonitorStateException (a nil
// answer); all reports whether every value was freed.
func (g *javaGroup) unlock(thread int64) (held, all bool) {
	g.t.Helper()
	latch := "redisson_unlock_latch:{" + g.group + "}:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	m := g.j.Eval(javaGroupUnlock, []string{g.group, g.channel(), latch},
		append([]string{g.owner(thread), "0", "30000", g.j.PublishCommand(), "13500", now()}, g.fields...)...)
	if m.IsNil() {
		return false, false
	}
	n, err := m.AsInt64()
	require.NoError(g.t, err)
	return true, n == 1
}

// forceUnlock is forceUnlock(): true when a value was held.
func (g *javaGroup) forceUnlock() bool {
	g.t.Helper()
	return g.j.EvalInt(javaGroupForceUnlock, []string{g.group, g.channel()},
		append([]string{"0", g.j.PublishCommand()}, g.fields...)...) > 0
}

// renew is the watchdog's renewal of thread's hold: false when Redisson cancels it.
func (g *javaGroup) renew(thread int64) bool {
	g.t.Helper()
	return g.j.EvalInt(javaGroupRenew, []string{g.group},
		append([]string{"30000", now(), g.owner(thread)}, g.fields...)...) == 1
}

// isLocked is isLocked(): whether any value is held.
func (g *javaGroup) isLocked() bool {
	g.t.Helper()
	return g.j.EvalInt(javaGroupIsLocked, []string{g.group}, append([]string{now()}, g.fields...)...) == 1
}

// isHeld is isHeldByThread(thread), as Redisson sends it (its loop starts at the second value).
func (g *javaGroup) isHeld(thread int64) bool {
	g.t.Helper()
	return g.j.EvalInt(javaGroupIsHeld, []string{g.group}, append([]string{now(), g.owner(thread)}, g.fields...)...) == 1
}

// A Java holder keeps Go out of the values it holds and not out of the others; its unlock message wakes
// a Go waiter, which then holds what Java held; Java reads Go's holds as its own kind.
func TestGroupJavaHoldsGoWaits(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("class")
		java := newJavaGroup(t, tg, group, "a", "b")
		ok, _ := java.tryLock(1, 30*time.Second)
		require.True(t, ok, "Java lock of a free group")
		requireHolds(t, rdb, group, java.owner(1), 1, "a", "b")

		c := tg.Client(t, slowRecheck)
		bc := newGroup(t, c, group, []string{"b", "c"})
		before := hash(t, rdb, group)
		_, err := bc.TryLock(ctx, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired)
		require.Equal(t, before, hash(t, rdb, group), "a failed Go try wrote into the group")
		locked, err := bc.IsLocked(ctx)
		require.NoError(t, err)
		require.True(t, locked, "Go's IsLocked of a value Java holds")

		de := newGroup(t, c, group, []string{"d", "e"})
		held := lockGroup(t, de, ctx)
		jde := newJavaGroup(t, tg, group, "d", "e")
		require.True(t, jde.isLocked(), "Java's isLocked of values Go holds")
		ok, ms := jde.tryLock(2, 30*time.Second)
		require.False(t, ok, "Java acquired values Go holds")
		require.Greater(t, ms, int64(20000), "Java's wait for Go's watchdog lease")
		require.LessOrEqual(t, ms, int64(30000)+1000, "Java's wait for Go's watchdog lease")
		require.NoError(t, de.Unlock(held))

		got := testkit.Background(func() (context.Context, error) { return bc.Lock(ctx) })
		parkedOn(t, c, group)
		require.True(t, java.isHeld(1))
		released, all := java.unlock(1)
		require.True(t, released && all, "Java unlock")
		h2 := testkit.Await(t, got, "Go waiter after the Java unlock")
		requireHolds(t, rdb, group, ownerOf(t, c, h2), 1, "b", "c")
		require.Empty(t, ownedBy(hash(t, rdb, group), java.owner(1)), "Java's fields stayed after its unlock")
		require.NoError(t, bc.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// A Go holder keeps a Java process out; Go's release message wakes the Java waiter, which then
// re-enters, renews and releases as Redisson does beside Go.
func TestGroupGoHoldsJavaWaits(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("class")
		c := tg.Client(t)
		ab := newGroup(t, c, group, []string{"a", "b"})
		held := lockGroup(t, ab, ctx)
		java := newJavaGroup(t, tg, group, "b", "c")
		require.False(t, java.tryLockOnce(1, 30*time.Second), "Java tryLock() of a value Go holds")
		ok, ms := java.tryLock(1, 30*time.Second)
		require.False(t, ok)
		require.Positive(t, ms)
		require.Empty(t, ownedBy(hash(t, rdb, group), java.owner(1)), "a failed Java try wrote into the group")

		sub := java.j.Subscribe(java.channel())
		require.NoError(t, ab.Unlock(held))
		sub.Until(10*time.Second, "Java lock after a Go unlock", func() bool {
			ok, _ := java.tryLock(1, 30*time.Second)
			return ok
		})
		ok, _ = java.tryLock(1, 30*time.Second) // re-entry
		require.True(t, ok)
		requireHolds(t, rdb, group, java.owner(1), 2, "b", "c")

		// Go waits on Java's hold, and is kept out while Java's watchdog renews it.
		_, err := ab.TryLock(ctx, 0)
		require.ErrorIs(t, err, redisync.ErrNotAcquired)
		expire := hash(t, rdb, group)[field("b")+":"+java.owner(1)+":expire_time"]
		testkit.Eventually(t, 5*time.Second, func() error {
			require.True(t, java.renew(1), "Java's renewal beside Go")
			if hash(t, rdb, group)[field("b")+":"+java.owner(1)+":expire_time"] == expire {
				return errNotYet
			}
			return nil
		})
		released, all := java.unlock(1)
		require.True(t, released)
		require.False(t, all, "the first of two unlocks freed the values")
		requireHolds(t, rdb, group, java.owner(1), 1, "b", "c")
		got := testkit.Background(func() (context.Context, error) { return ab.TryLock(ctx, 20*time.Second) })
		parkedOn(t, c, group)
		released, all = java.unlock(1)
		require.True(t, released && all)
		h2 := testkit.Await(t, got, "Go waiter after the Java unlock")
		require.NoError(t, ab.Unlock(h2))
		requireGone(t, rdb, group)
	})
}

// A forced unlock from either side frees the other side's values: a Go holder learns of it at its
// next renewal, and Redisson's renewal and unlock find the hold gone.
func TestGroupForceUnlockAcrossProcesses(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("force")
		java := newJavaGroup(t, tg, group, "a", "b")
		ok, _ := java.tryLock(1, 30*time.Second)
		require.True(t, ok)
		c := tg.Client(t, redisync.WithWatchdogTimeout(time.Second))
		b := newGroup(t, c, group, []string{"b"})
		was, err := b.ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, was)
		require.False(t, java.renew(1), "Redisson's renewal of a hold forced free")
		released, _ := java.unlock(1)
		require.False(t, released, "Redisson's unlock of a hold forced free")

		cd := newGroup(t, c, group, []string{"c", "d"})
		held := lockGroup(t, cd, ctx)
		require.True(t, newJavaGroup(t, tg, group, "d").forceUnlock())
		select {
		case <-held.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the Go holder did not learn of Java's forced unlock")
		}
		require.ErrorIs(t, context.Cause(held), redisync.ErrLost)
		require.ErrorIs(t, cd.Unlock(held), redisync.ErrNotHeld)
		requireGone(t, rdb, group)
	})
}

// A value whose holder's lease has ended is taken over, across processes: Go takes Java's (and its
// stale fields go), Java takes Go's (Redisson leaves them; Go's Unlock then removes them).
func TestGroupTakeoverAfterExpiry(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		ctx := context.Background()
		group := groupName("expiry")
		java := newJavaGroup(t, tg, group, "a")
		ok, _ := java.tryLock(1, 300*time.Millisecond)
		require.True(t, ok)
		c := tg.Client(t)
		ab := newGroup(t, c, group, []string{"a", "b"})
		held, err := ab.TryLock(ctx, 20*time.Second)
		require.NoError(t, err)
		require.Empty(t, ownedBy(hash(t, rdb, group), java.owner(1)), "the expired Java holder's fields stayed")
		released, _ := java.unlock(1)
		require.False(t, released, "Redisson's unlock of a hold taken over")
		requireHolds(t, rdb, group, ownerOf(t, c, held), 1, "a", "b")
		require.NoError(t, ab.Unlock(held))

		// Another value held keeps the hash alive past c's lease: Redisson's try that takes a value
		// over at the moment the hash itself expires (PTTL 0) sets no TTL, and the hash goes at once.
		z := newGroup(t, c, group, []string{"z"})
		zheld := lockGroup(t, z, ctx)
		short := newGroup(t, c, group, []string{"c"}, WithLease(300*time.Millisecond))
		held = lockGroup(t, short, ctx)
		owner := ownerOf(t, c, held)
		jc := newJavaGroup(t, tg, group, "c")
		testkit.Eventually(t, 10*time.Second, func() error {
			if ok, _ := jc.tryLock(2, 30*time.Second); !ok {
				return errNotYet
			}
			return nil
		})
		require.ErrorIs(t, ab.Unlock(held), redisync.ErrNotHeld)
		require.ErrorIs(t, short.Unlock(held), redisync.ErrNotHeld)
		require.Empty(t, ownedBy(hash(t, rdb, group), owner), "Go's stale fields stayed after its Unlock")
		released, all := jc.unlock(2)
		require.True(t, released && all)
		require.NoError(t, z.Unlock(zheld))
		requireGone(t, rdb, group)
	})
}

var errNotYet = errors.New("not yet")
