package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

func TestReplicaAckBadInput(t *testing.T) {
	tg := testkit.Standalone(t)
	for _, opt := range []redisync.Option{
		redisync.WithReplicaAck(0, time.Second),
		redisync.WithReplicaAck(-2, time.Second),
		redisync.WithReplicaAck(1, 0),
		redisync.WithReplicaAck(1, -time.Second),
	} {
		c, err := redisync.New(rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true}, opt)
		if err == nil {
			c.Close()
			t.Fatal("bad replica acknowledgement accepted")
		}
		if !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Fatalf("%v, want ErrInvalidArgument", err)
		}
	}
}

// Without any replica, requiring one fails every acquisition and leaves nothing behind (on the
// standalone server and on every master of the cluster), while AllReplicas waits for none.
func TestReplicaAckWithoutReplicas(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		strict := tg.Client(t, redisync.WithReplicaAck(1, 50*time.Millisecond), redisync.WithWatchdogTimeout(ttl))
		for _, name := range []string{"ack-none-a", "ack-none-b", "ack-none-c"} {
			l := newLock(t, strict, name, rlock.WithFencing())
			if _, err := l.TryLock(context.Background(), 0); !errors.Is(err, redisync.ErrNotReplicated) {
				t.Fatalf("%s: %v, want ErrNotReplicated", name, err)
			}
			if locked, err := l.IsLocked(context.Background()); err != nil || locked {
				t.Fatalf("%s: left locked after a failed acknowledgement (%v, %v)", name, locked, err)
			}
		}
		// A try that does not acquire writes nothing a failover could lose that matters: it is a
		// failed try, and the wait goes on (one held elsewhere until the bound: ErrNotAcquired).
		other := tg.Client(t, redisync.WithoutReplicaAck())
		held := mustLock(t, newLock(t, other, "ack-none-held"))
		if _, err := newLock(t, strict, "ack-none-held").TryLock(context.Background(), 200*time.Millisecond); !errors.Is(err, redisync.ErrNotAcquired) {
			t.Fatalf("a held lock: %v, want ErrNotAcquired", err)
		}
		if err := newLock(t, other, "ack-none-held").Unlock(held); err != nil {
			t.Fatal(err)
		}
		s, _ := semaphore.New(strict, "ack-none-sem")
		s.TrySetPermits(context.Background(), 1)
		t.Cleanup(func() { testkit.Do(t, tg.Redis(t), "DEL", "ack-none-sem") })
		if err := s.TryAcquire(context.Background(), 1, 0); !errors.Is(err, redisync.ErrNotReplicated) {
			t.Fatalf("semaphore: %v, want ErrNotReplicated", err)
		}
		if n, _ := s.Available(context.Background()); n != 1 {
			t.Fatalf("semaphore: %d permits after a failed acknowledgement, want the 1 given back", n)
		}

		all := tg.Client(t, redisync.WithReplicaAck(redisync.AllReplicas, 50*time.Millisecond))
		l := newLock(t, all, "ack-none-all")
		if err := l.Unlock(mustLock(t, l)); err != nil {
			t.Fatal(err)
		}
	})
}

// With a healthy replica, acquisitions and renewals are acknowledged: a watchdog hold lives through
// many renewals.
func TestReplicaAckHealthy(t *testing.T) {
	st := redistest.StartSentinel(t)
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true},
		redisync.WithReplicaAck(1, time.Second), redisync.WithWatchdogTimeout(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	l := newLock(t, c, "ack-healthy", rlock.WithFencing())
	held := mustLock(t, l)
	if n, err := st.Replica.Do("EXISTS", "ack-healthy"); err != nil || n != "1" {
		t.Fatalf("acknowledged lock not on the replica: %q, %v", n, err)
	}
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	testkit.AwaitRenewals(t, rdb, "ack-healthy", 3)
	if cause := context.Cause(held); cause != nil {
		t.Fatalf("acknowledged renewals lost the hold: %v", cause)
	}
	again, err := l.Lock(held) // re-entry, acknowledged too
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(again); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// cmdCalls returns how many times s has run cmd (lower case, as INFO commandstats names it).
func cmdCalls(t *testing.T, s *redistest.Server, cmd string) int64 {
	t.Helper()
	out, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && name == "cmdstat_"+cmd {
			calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			return n
		}
	}
	return 0
}

// Without any option, a Client on a master with a replica waits for the replica as Redisson's
// checkLockSyncedSlaves does; WithoutReplicaAck turns it off; a waiter is still served (woken, then
// acquiring by a try of its own, which waits for the replica too).
func TestReplicaAckOnByDefault(t *testing.T) {
	st := redistest.StartSentinel(t)
	client := func(opts ...redisync.Option) *redisync.Client {
		c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testkit.CloseClean(t, c) })
		return c
	}
	c := client()
	l := newLock(t, c, "ack-default")
	before := cmdCalls(t, st.Master, "wait")
	held := mustLock(t, l)
	if n := cmdCalls(t, st.Master, "wait") - before; n < 1 {
		t.Fatalf("%d WAITs for an acquisition on a master with a replica, want 1", n)
	}
	if n, err := st.Replica.Do("EXISTS", "ack-default"); err != nil || n != "1" {
		t.Fatalf("acknowledged lock not on the replica: %q, %v", n, err)
	}
	waiter := newLock(t, client(), "ack-default")
	got := testkit.Background(func() (context.Context, error) { return waiter.Lock(context.Background()) })
	testkit.Eventually(t, 10*time.Second, func() error { // the waiter tried and listens
		if n := cmdCalls(t, st.Master, "wait") - before; n < 2 {
			return fmt.Errorf("%d WAITs so far", n)
		}
		return nil
	})
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if err := waiter.Unlock(testkit.Await(t, got, "the waiter")); err != nil {
		t.Fatal(err)
	}

	off := newLock(t, client(redisync.WithoutReplicaAck()), "ack-off")
	before = cmdCalls(t, st.Master, "wait")
	if err := off.Unlock(mustLock(t, off)); err != nil {
		t.Fatal(err)
	}
	if n := cmdCalls(t, st.Master, "wait") - before; n != 0 {
		t.Fatalf("%d WAITs with WithoutReplicaAck", n)
	}
}

// Without replicas, the default acknowledgement costs nothing per acquisition: no WAIT, and one INFO
// for the Client's first acquisition.
func TestReplicaAckByDefaultWithoutReplicas(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	l := newLock(t, c, "ack-default-none")
	waits, infos := cmdCalls(t, srv, "wait"), cmdCalls(t, srv, "info")
	for range 50 {
		if err := l.Unlock(mustLock(t, l)); err != nil {
			t.Fatal(err)
		}
	}
	if n := cmdCalls(t, srv, "wait") - waits; n != 0 {
		t.Fatalf("%d WAITs without replicas", n)
	}
	// One INFO is this test's own; the Client asks once, and again every few seconds at most.
	if n := cmdCalls(t, srv, "info") - infos; n > 3 {
		t.Fatalf("%d INFOs for 50 acquisitions", n)
	}
}
