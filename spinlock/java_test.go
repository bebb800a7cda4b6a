package spinlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/spinlock"
)

// What a Redisson process sends for RSpinLock (RedissonSpinLock.tryLockInnerAsync and
// unlockInnerAsync): a try answers nil when it acquires or re-enters, else the holder's PTTL; an
// unlock answers nil when the thread holds nothing, 0 when holds are left, 1 when it freed the lock.
// Neither publishes: Java spinners poll.
const (
	javaSpinTry = "if (redis.call('exists', KEYS[1]) == 0) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	javaSpinUnlock = "local val = redis.call('get', KEYS[2]); " +
		"if val ~= false then " +
		"return tonumber(val);" +
		"end; " +
		"if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"redis.call('set', KEYS[2], 0, 'px', ARGV[3]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call('set', KEYS[2], 1, 'px', ARGV[3]); " +
		"return 1; " +
		"end; "
)

// javaSpin is a Redisson process's RSpinLock on one name, with Redisson's default watchdog lease.
type javaSpin struct {
	t    *testing.T
	j    *testkit.Java
	tg   *testkit.Target
	name string
	id   string // the Redisson client's UUID
	req  int
}

func newJavaSpin(t *testing.T, tg *testkit.Target, name string) *javaSpin {
	return &javaSpin{t: t, j: tg.Java(t), tg: tg, name: name, id: "5b9d3e1f-7a0c-4e2d-9f31-" + strconv.FormatInt(time.Now().UnixNano()%1e12, 10)}
}

func (s *javaSpin) field(thread int) string { return s.id + ":" + strconv.Itoa(thread) }

// try is one tryAcquire of thread: true when it acquired or re-entered, else the holder's PTTL.
func (s *javaSpin) try(thread int) (bool, int64) {
	s.t.Helper()
	m := s.j.Eval(javaSpinTry, []string{s.name}, "30000", s.field(thread))
	if m.IsNil() {
		return true, 0
	}
	ttl, err := m.AsInt64()
	require.NoError(s.t, err)
	return false, ttl
}

// unlock is RLock.unlock() of thread: the script under a fresh request's latch, then the latch's
// DEL. It returns the script's answer: "" (nil: not held), "0" or "1".
func (s *javaSpin) unlock(thread int) string {
	s.t.Helper()
	s.req++
	latch := "redisson_unlock_latch:{" + s.name + "}:" + s.id + "-" + strconv.Itoa(s.req)
	if strings.Contains(s.name, "{") {
		latch = "redisson_unlock_latch:" + s.name + ":" + s.id + "-" + strconv.Itoa(s.req)
	}
	m := s.j.Eval(javaSpinUnlock, []string{s.name, latch}, "30000", s.field(thread), "13500")
	testkit.Do(s.t, s.tg.Redis(s.t), "DEL", latch)
	if m.IsNil() {
		return ""
	}
	n, err := m.AsInt64()
	require.NoError(s.t, err)
	return strconv.FormatInt(n, 10)
}

// Redisson's own RSpinLock scripts against the Go spin lock, both ways: a Java holder (re-entered
// once) keeps a spinning Go waiter out until its last unlock, and a Go holder keeps Java's tries out
// until it unlocks.
func TestJavaSpinLock(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		for _, name := range []string{"java-spin", "{job}:spin-7"} {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				java := newJavaSpin(t, tg, name)
				c, n := counted(t, tg, name)
				l := newLock(t, c, name, spinlock.WithBackoff(spinlock.ConstantBackoff{Delay: 10 * time.Millisecond}))
				spinning := func(more int64) {
					t.Helper()
					from := n.Load()
					testkit.Eventually(t, 10*time.Second, func() error {
						if n.Load() < from+more {
							return fmt.Errorf("%d tries, want %d", n.Load()-from, more)
						}
						return nil
					})
				}

				// Java holds, and re-enters.
				for range 2 {
					ok, _ := java.try(1)
					require.True(t, ok, "Java's try on its own lock")
				}
				_, err := l.TryLock(ctx, 0)
				require.ErrorIs(t, err, redisync.ErrNotAcquired, "Go beside a Java holder")
				got := lockIn(l, ctx)
				spinning(3)
				require.Equal(t, "0", java.unlock(1), "Java's first unlock of two holds")
				spinning(3)
				select {
				case r := <-got:
					t.Fatalf("the Go waiter returned while Java still held the lock once: %v", r.Err)
				default:
				}
				require.Equal(t, "1", java.unlock(1), "Java's last unlock")
				held := testkit.Await(t, got, "the Go spinner after Java's unlock")

				// Go holds: Java's tries see the watchdog's lease, and Java unlocks nothing of it.
				ok, ttl := java.try(2)
				require.False(t, ok, "Java acquired beside a Go holder")
				require.True(t, ttl > 0 && ttl <= 30000, "Java's try read the PTTL %d", ttl)
				require.Equal(t, "", java.unlock(2), "Java's unlock of a lock it does not hold")
				mustUnlock(t, l, held)
				ok, _ = java.try(2)
				require.True(t, ok, "Java's try after the Go unlock")
				require.Equal(t, "1", java.unlock(2))
			})
		}
	})
}
