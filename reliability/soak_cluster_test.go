package reliability

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
)

// TestSoakCluster is TestSoak on a 3-master cluster, every node behind a proxy that cuts, with slot
// moves among the faults: every few hundred milliseconds the slot of one of the soak's objects moves
// to another master (key by key or in one MIGRATE, sometimes slowly), so that over the run each
// object's slot goes back and forth while every primitive contends on it, beside stalls, blocked
// commands, killed Pub/Sub connections and restarts without persistence of one node at a time (the
// node comes back empty with its slots, as its cluster config file keeps them), and lost requests
// and replies. It ends, as TestSoak does, with every permit back and every lock free.
//
// cd reliability && go test -race -run 'TestSoakCluster$' -soak=5m -v . for the long form.
func TestSoakCluster(t *testing.T) {
	cl := redistest.StartProxiedCluster(t, 3, 0)
	// Stalls are part of the soak (one longer than the watchdog's 2 s TTL): a node timeout above them
	// keeps the other masters from marking the stalled one as failed, which would take the whole
	// cluster down (CLUSTERDOWN) until it is cleared.
	for _, m := range cl.Masters {
		if _, err := m.Do("CONFIG", "SET", "cluster-node-timeout", "10000"); err != nil {
			t.Fatal(err)
		}
	}
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Masters}
	var moving sync.Mutex // a restart waits for the slot move under way: it would leave it half done
	soak(t, soakEnv{
		tg:  tg,
		rdb: tg.Redis(t), // the checks send no script: the proxies never cut them
		arm: cl.Arm,
		more: func(ctx context.Context, objects []string, count func(string)) {
			moveSlots(t, ctx, cl, &moving, objects, count)
		},
		restart: func(srv *redistest.Server) error {
			moving.Lock()
			defer moving.Unlock()
			if err := srv.Restart(); err != nil {
				return err
			}
			_, err := srv.Do("CONFIG", "SET", "cluster-node-timeout", "10000") // set at run time: not kept
			return err
		},
	})
}

// moveSlots moves the slot of a random object to another master every few hundred milliseconds until
// ctx ends, and finishes a move that a stalled node failed (a slot left migrating would refuse every
// script on it).
func moveSlots(t *testing.T, ctx context.Context, cl *redistest.Cluster, moving *sync.Mutex, objects []string, count func(string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(200+rand.IntN(400)) * time.Millisecond):
		}
		slot := int(send.Slot(objects[rand.IntN(len(objects))]))
		from, err := cl.SlotOwner(context.Background(), slot)
		if err != nil {
			continue // a node stalled: the next move
		}
		to := from
		for to == from {
			to = cl.Masters[rand.IntN(len(cl.Masters))]
		}
		how := redistest.SlotMove{PerKey: rand.IntN(2) == 0}
		if rand.IntN(4) == 0 {
			how.Pause = time.Duration(10+rand.IntN(40)) * time.Millisecond
		}
		kind := "slot move, one MIGRATE"
		if how.PerKey {
			kind = "slot move, key by key"
		}
		moving.Lock()
		count(kind)
		err = moveUntilDone(cl, slot, to, how)
		moving.Unlock()
		if err != nil {
			t.Errorf("slot %d could not be moved for a minute: %v", slot, err)
			return
		}
	}
}

// moveUntilDone moves slot to to, again after a failure (a node stalled under the move: the next
// attempt finishes it) for up to a minute.
func moveUntilDone(cl *redistest.Cluster, slot int, to *redistest.Server, how redistest.SlotMove) error {
	for start := time.Now(); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.MoveSlot(ctx, slot, to, how)
		cancel()
		if err == nil || time.Since(start) > time.Minute {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
