package reliability

import (
	"context"
	"errors"
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
