package reliability

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/rs/zerolog"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// sentinelClient returns a Client that finds the master through st's sentinel.
func sentinelClient(t *testing.T, st *redistest.Sentinel, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	c, err := redisync.New(rueidis.ClientOption{
		InitAddress:  []string{st.Sentinel.Addr},
		Sentinel:     rueidis.SentinelOption{MasterSet: st.MasterName},
		DisableCache: true,
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	return c
}

// awaitFailover waits until the sentinel names the replica as the master.
func awaitFailover(t *testing.T, st *redistest.Sentinel) {
	t.Helper()
	want := strings.Replace(st.Replica.Addr, ":", "\n", 1)
	testkit.Eventually(t, 30*time.Second, func() error {
		got, err := st.Sentinel.Do("SENTINEL", "get-master-addr-by-name", st.MasterName)
		if err == nil && got != want {
			err = fmt.Errorf("master is %q, want %q", got, want)
		}
		return err
	})
}

// lockSoon retries TryLock until the client has found the new master (its first commands after a
// failover may fail while it switches).
func lockSoon(t *testing.T, l *rlock.Lock) context.Context {
	t.Helper()
	var held context.Context
	testkit.Eventually(t, 20*time.Second, func() (err error) {
		held, err = l.TryLock(context.Background(), time.Second)
		return err
	})
	return held
}

// TestSentinelFailoverKeepsWorking: a lock held across a failover (the master dies after the lock
// was replicated) stays held, its renewals reach the new master, a waiter parked before the failover
// re-subscribes there and is woken by the release, and locks taken after the failover work.
func TestSentinelFailoverKeepsWorking(t *testing.T) {
	st := redistest.StartSentinel(t)
	// A long watchdog timeout and recheck interval: the waiter can only be woken in time by the
	// release notification.
	opts := []redisync.Option{redisync.WithWatchdogTimeout(20 * time.Second), redisync.WithRecheckInterval(time.Minute)}
	c1, c2 := sentinelClient(t, st, opts...), sentinelClient(t, st, opts...)
	l1, _ := rlock.New(c1, "across-failover")
	l2, _ := rlock.New(c2, "across-failover")
	held, err := l1.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now()
	got := make(chan error, 1)
	var held2 context.Context
	go func() {
		var err error
		held2, err = l2.Lock(context.Background())
		got <- err
	}()
	testkit.Eventually(t, 5*time.Second, func() error {
		out, err := st.Master.Do("PUBSUB", "NUMSUB", "redisson_lock__channel:{across-failover}")
		if err == nil && !strings.HasSuffix(out, "\n1") {
			err = fmt.Errorf("waiter not subscribed yet: %q", out)
		}
		return err
	})

	// The lock reached the replica; then the master dies and the sentinel promotes the replica.
	testkit.Eventually(t, 5*time.Second, func() error {
		n, err := st.Replica.Do("EXISTS", "across-failover")
		if err == nil && n != "1" {
			err = errors.New("lock not replicated yet")
		}
		return err
	})
	if err := st.Master.Kill(); err != nil {
		t.Fatal(err)
	}
	awaitFailover(t, st)
	// The hold survives and is renewed on the new master: its TTL there rises above what is left of
	// the lease taken before the failover (the watchdog renews every ~7 s).
	testkit.Eventually(t, 20*time.Second, func() error {
		ms, err := st.Replica.Do("PTTL", "across-failover")
		if err != nil {
			return err
		}
		left := 20*time.Second - time.Since(acquired)
		if d, _ := time.ParseDuration(ms + "ms"); d < left+2*time.Second {
			return fmt.Errorf("PTTL %s on the new master: not renewed there yet", ms)
		}
		return nil
	})
	if context.Cause(held) != nil {
		t.Fatalf("hold lost across a failover that kept it: %v", context.Cause(held))
	}
	select {
	case err := <-got:
		t.Fatalf("waiter acquired while the lock was held: %v", err)
	default:
	}

	released := time.Now()
	if err := l1.Unlock(held); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(released); d > 5*time.Second {
			t.Errorf("waiter woke %v after the release: notification lost across the failover", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("waiter not woken by the release on the new master")
	}
	if err := l2.Unlock(held2); err != nil {
		t.Fatal(err)
	}

	// New locks after the failover.
	for range 3 {
		h, err := l1.TryLock(context.Background(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l1.Unlock(h); err != nil {
			t.Fatal(err)
		}
	}
}

// proxied is a Sentinel setup whose replica replicates through a toxiproxy, so that the replication
// link can be cut while clients still reach the master.
type proxied struct {
	*redistest.Sentinel
	proxy *toxiproxy.Proxy
}

func startProxied(t *testing.T) *proxied {
	t.Helper()
	st := redistest.StartSentinel(t)
	// Sentinel would point a replica that replicates from another address (our proxy) back at the
	// master after failover-timeout; make that longer than the test.
	if _, err := st.Sentinel.Do("SENTINEL", "SET", st.MasterName, "failover-timeout", "120000"); err != nil {
		t.Fatal(err)
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "replication", "127.0.0.1:0", st.Master.Addr)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.Toxics.ResetToxics(context.Background())
		proxy.Stop()
	})
	_, port, _ := net.SplitHostPort(proxy.Listen)
	if _, err := st.Replica.Do("REPLICAOF", "127.0.0.1", port); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		info, err := st.Replica.Do("INFO", "replication")
		if err == nil && !(strings.Contains(info, "master_port:"+port+"\r\n") && strings.Contains(info, "master_link_status:up")) {
			err = errors.New("replica not replicating through the proxy yet")
		}
		return err
	})
	return &proxied{Sentinel: st, proxy: proxy}
}

// blackhole stops every byte on the replication link, both ways, without closing it: the master
// still counts the replica as connected, and nothing reaches it.
func (p *proxied) blackhole(t *testing.T) {
	t.Helper()
	for _, stream := range []string{"downstream", "upstream"} {
		body := fmt.Sprintf(`{"name":"blackhole_%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, stream, stream)
		if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplicaAckPreventsTwoOwners shows the hazard of an unreplicated lock and its cure. Without
// replica acknowledgement (WithoutReplicaAck), a lock acquired while the replication link is cut is
// lost by the failover and a second owner acquires it; the first learns of the loss only when its
// Client checks its holds after the switch (ErrLost), so for a moment both believe they hold it.
// With it, the first acquisition fails (and is given back), so there is never more than one owner.
func TestReplicaAckPreventsTwoOwners(t *testing.T) {
	t.Run("without", func(t *testing.T) {
		p := startProxied(t)
		c1 := sentinelClient(t, p.Sentinel, redisync.WithoutReplicaAck())
		c2 := sentinelClient(t, p.Sentinel, redisync.WithoutReplicaAck())
		l1, _ := rlock.New(c1, "unreplicated", rlock.WithLease(time.Minute))
		l2, _ := rlock.New(c2, "unreplicated", rlock.WithLease(time.Minute))
		p.blackhole(t)
		held1, err := l1.TryLock(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Master.Kill()
		awaitFailover(t, p.Sentinel)
		held2 := lockSoon(t, l2)
		// The promoted replica never had the first owner's lock: the second acquired it, and the
		// first, whose lease runs a minute, is told it lost the lock by its Client's check of its
		// holds after the failover, not by its lease.
		select {
		case <-held1.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("the first owner was not told that the failover lost its lock")
		}
		if cause := context.Cause(held1); !errors.Is(cause, redisync.ErrLost) {
			t.Fatalf("first owner's hold ended with %v, want ErrLost", cause)
		}
		if err := l2.Unlock(held2); err != nil {
			t.Fatal(err)
		}
		// Its release finds nothing (the new master never had its lock): ErrNotHeld. When the first send
		// of that release went to the dead master's connection and was sent again, the client cannot
		// tell "my first send released it" from "it was gone" and, since it still counted the hold,
		// reports it released: nil.
		if err := l1.Unlock(held1); err != nil && !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("first owner's unlock after the failover: %v, want ErrNotHeld or nil", err)
		}
	})

	t.Run("with", func(t *testing.T) {
		p := startProxied(t)
		ack := redisync.WithReplicaAck(1, 500*time.Millisecond)
		c1 := sentinelClient(t, p.Sentinel, ack)
		l1, _ := rlock.New(c1, "replicated", rlock.WithLease(time.Minute))

		// While the link is up, acquisitions are acknowledged and succeed.
		h, err := l1.TryLock(context.Background(), 0)
		if err != nil {
			t.Fatalf("acknowledged acquisition failed: %v", err)
		}
		if err := l1.Unlock(h); err != nil {
			t.Fatal(err)
		}
		// Releases are not acknowledged: let this one reach the replica before the link is cut,
		// or the failover would bring the released lock back until its lease ends.
		testkit.Eventually(t, 5*time.Second, func() error {
			n, err := p.Replica.Do("EXISTS", "replicated")
			if err == nil && n != "0" {
				err = errors.New("release not replicated yet")
			}
			return err
		})

		p.blackhole(t)
		start := time.Now()
		_, err = l1.TryLock(context.Background(), 0)
		if !errors.Is(err, redisync.ErrNotReplicated) {
			t.Fatalf("acquisition over a cut replication link: %v, want ErrNotReplicated", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("failing took %v, timeout was 500ms", d)
		}
		if n, err := p.Master.Do("EXISTS", "replicated"); err != nil || n != "0" {
			t.Fatalf("unacknowledged acquisition left on the master: EXISTS = %q, %v", n, err)
		}
		p.Master.Kill()
		awaitFailover(t, p.Sentinel)
		// After the failover the lock is free: the one owner is whoever acquires now, and the first
		// client, whose acquisition failed, holds nothing that could overlap.
		plain := sentinelClient(t, p.Sentinel)
		lp, _ := rlock.New(plain, "replicated", rlock.WithLease(time.Minute))
		held := lockSoon(t, lp)
		if n := testkit.Holds(c1); n != 0 {
			t.Fatalf("client whose acquisition failed records %d holds", n)
		}
		if err := lp.Unlock(held); err != nil {
			t.Fatal(err)
		}
	})
}
