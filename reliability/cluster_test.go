package reliability

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// Row: cluster failover (CLUSTER FAILOVER on the replica of the master that owns the lock). The
// hold survives and keeps being renewed through the MOVED redirects, every key of the fenced lock
// stays in one slot, and the lock works for others after the failover.
func TestFaultClusterFailover(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	// No renewal lands while the failover goes on (the old master holds writes back until its
	// replica has caught up and taken over): a lease that outlasts a failover on a busy machine,
	// where one of a second did not (the key expired on the new master).
	c := tg.Client(t, redisync.WithWatchdogTimeout(5*ttl))
	const name = "cluster-failover"
	l := newLock(t, c, name, rlock.WithFencing())
	held := mustLock(t, l)

	// The master serving the lock's slot, and its replica.
	i := int(send.Slot(name)) * len(cl.Masters) / 16384
	replica := cl.Replicas[i]
	if _, err := replica.Do("CLUSTER", "FAILOVER"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		info, err := replica.Do("INFO", "replication")
		if err == nil && !strings.Contains(info, "role:master") {
			err = errors.New("replica not promoted yet")
		}
		return err
	})
	testkit.AwaitRenewals(t, tg.Redis(t), name, 3) // renewals through the new master
	if cause := context.Cause(held); cause != nil {
		t.Fatalf("hold lost across a graceful cluster failover: %v", cause)
	}
	if ok, err := l.IsHeld(held); err != nil || !ok {
		t.Fatalf("IsHeld after failover = %v, %v", ok, err)
	}
	if n, err := replica.Do("EXISTS", name); err != nil || n != "1" {
		t.Fatalf("lock not on the new master: %q, %v", n, err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	other := newLock(t, tg.Client(t), name, rlock.WithFencing())
	h2 := mustLock(t, other)
	if tok, _ := other.Token(h2); tok < 2 {
		t.Fatalf("token after failover %d: the fencing counter was lost", tok)
	}
	if err := other.Unlock(h2); err != nil {
		t.Fatal(err)
	}
}
