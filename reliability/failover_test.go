package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// parkedOpts are the options of the Clients whose waiters park across a fault: a recheck interval
// far longer than the tests, so that only the notifier can wake them in time, and no replica
// acknowledgement, so that a try on a new master that has no replica yet is not refused for it.
var parkedOpts = []redisync.Option{redisync.WithRecheckInterval(time.Minute), redisync.WithoutReplicaAck()}

// parked is one waiter of each kind of wait per waiting Client, parked behind the holder's holds:
// an rlock waiter (release channel and hand-over), a fair lock waiter (a channel of its own) and a
// semaphore waiter (release channel and grants). Each one, once it acquires, releases at once, so
// that the next one can.
type parked struct {
	t       *testing.T
	servers []*redistest.Server
	rl      *rlock.Lock
	fl      *fairlock.Lock
	sem     *semaphore.Semaphore
	rlHeld  context.Context
	flHeld  context.Context
	waiters int
	got     chan acquired
	gave    sync.WaitGroup // the waiters' own Unlock and Release, after they acquired
}

type acquired struct {
	what string
	at   time.Time
	err  error
}

// park takes the holds on holder and parks the waiters of waiting behind them, on names that start
// with prefix (a hash tag, on a cluster), and returns once every waiter listens, as servers show.
func park(t *testing.T, servers []*redistest.Server, holder *redisync.Client, waiting []*redisync.Client, prefix string) *parked {
	t.Helper()
	ctx := context.Background()
	p := &parked{t: t, servers: servers, waiters: 3 * len(waiting), got: make(chan acquired, 3*len(waiting))}
	p.rl = must1(rlock.New(holder, prefix+"rl"))
	p.fl = must1(fairlock.New(holder, prefix+"fl"))
	p.sem = must1(semaphore.New(holder, prefix+"sem"))
	var err error
	if p.rlHeld, err = p.rl.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if p.flHeld, err = p.fl.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.sem.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	for _, c := range waiting {
		rl, fl, sem := must1(rlock.New(c, prefix+"rl")), must1(fairlock.New(c, prefix+"fl")), must1(semaphore.New(c, prefix+"sem"))
		for _, l := range []struct {
			what string
			l    lockable
		}{{"rlock", rl}, {"fair lock", fl}} {
			p.gave.Add(1)
			go func() {
				defer p.gave.Done()
				held, err := l.l.TryLock(wctx, 2*time.Minute)
				p.got <- acquired{l.what, time.Now(), err}
				if err == nil {
					err = l.l.Unlock(held)
				}
				if err != nil {
					t.Errorf("%s waiter: %v", l.what, err)
				}
			}()
		}
		p.gave.Add(1)
		go func() {
			defer p.gave.Done()
			err := sem.Acquire(wctx, 1)
			p.got <- acquired{"semaphore", time.Now(), err}
			if err == nil {
				err = sem.Release(context.Background(), 1)
			}
			if err != nil {
				t.Errorf("semaphore waiter: %v", err)
			}
		}()
	}
	names := core.Of(holder).Names()
	n := strconv.Itoa(len(waiting))
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, ch := range []string{names.Prefixed("redisson_lock__channel", p.rl.Name()), names.Prefixed("redisson_sc", p.sem.Name())} {
			if got := p.subscribers(servers, ch); got != len(waiting) {
				return fmt.Errorf("%s has %d subscribers, want %d", ch, got, len(waiting))
			}
		}
		queue := names.Prefixed("redisson_lock_queue", p.fl.Name())
		for _, s := range servers {
			if out, err := s.Do("LLEN", queue); err == nil && out == n {
				return nil
			}
		}
		return fmt.Errorf("%s does not hold %s waiters yet", queue, n)
	})
	return p
}

// subscribers counts channel's subscribers on servers, classic and sharded.
func (p *parked) subscribers(servers []*redistest.Server, channel string) int {
	total := 0
	for _, s := range servers {
		for _, cmd := range []string{"NUMSUB", "SHARDNUMSUB"} {
			out, err := s.Do("PUBSUB", cmd, channel)
			if f := strings.Fields(out); err == nil && len(f) == 2 {
				k, _ := strconv.Atoi(f[1])
				total += k
			}
		}
	}
	return total
}

// release gives the holds back, each call sent again until it succeeds (a call may meet the fault's
// end: a connection the failover closed), and returns when the last one did.
func (p *parked) release() time.Time {
	p.t.Helper()
	for _, r := range []struct {
		what string
		fn   func() error
	}{
		{"rlock Unlock", func() error { return p.rl.Unlock(p.rlHeld) }},
		{"fair lock Unlock", func() error { return p.fl.Unlock(p.flHeld) }},
		{"semaphore Release", func() error { return p.sem.Release(context.Background(), 1) }},
	} {
		testkit.Eventually(p.t, 20*time.Second, func() error {
			err := r.fn()
			if err != nil {
				p.t.Logf("%s: %v (sent again)", r.what, err)
			}
			return err
		})
	}
	return time.Now()
}

// await waits for every waiter to acquire, for up to bound after since, and returns when the last
// one did.
func (p *parked) await(since time.Time, bound time.Duration) time.Time {
	p.t.Helper()
	var last time.Time
	timeout := time.After(time.Until(since.Add(bound)))
	for range p.waiters {
		select {
		case a := <-p.got:
			if a.err != nil {
				p.t.Fatalf("%s waiter: %v", a.what, a.err)
			}
			if a.at.After(last) {
				last = a.at
			}
		case <-timeout:
			p.t.Fatalf("not every waiter acquired within %v (the recheck interval is a minute: a waiter left listening where nothing is published waits that long)", bound)
		}
	}
	// Their Unlock and Release are done before the test ends and closes their Clients.
	p.gave.Wait()
	return last
}

// TestSentinelFailoverWakesParkedWaiters: waiters of every kind parked on the master when Sentinel
// fails over while the old master stays up, by SENTINEL FAILOVER or because the master stalled (DEBUG
// SLEEP) long enough to be replaced and then came back. rueidis switches its commands to the new
// master when the sentinel announces it; the notifier's subscriptions must follow at the switch, not
// stay on the old master, where nothing the new master publishes arrives (and where a release, which
// publishes only to listeners, publishes nothing at all). The holder releases as soon as its Client
// has switched, and every waiter must acquire within a generous bound of the switch (the recheck
// interval is a minute); the figures are logged.
func TestSentinelFailoverWakesParkedWaiters(t *testing.T) {
	for _, how := range []string{"SENTINEL FAILOVER", "DEBUG SLEEP"} {
		t.Run(how, func(t *testing.T) {
			st := redistest.StartSentinel(t)
			holder := sentinelClient(t, st, parkedOpts...)
			waiting := []*redisync.Client{sentinelClient(t, st, parkedOpts...), sentinelClient(t, st, parkedOpts...)}
			p := park(t, []*redistest.Server{st.Master, st.Replica}, holder, waiting, "parked-")
			// The holds must have reached the replica, or the failover loses them (a second owner
			// then, which replica acknowledgement is for: see TestReplicaAckPreventsTwoOwners).
			testkit.Eventually(t, 5*time.Second, func() error {
				for _, key := range []string{p.rl.Name(), p.fl.Name()} {
					if n, err := st.Replica.Do("EXISTS", key); err != nil || n != "1" {
						return fmt.Errorf("%s not replicated yet (%v)", key, err)
					}
				}
				return nil
			})
			start := time.Now()
			switch how {
			case "SENTINEL FAILOVER":
				if _, err := st.Sentinel.Do("SENTINEL", "FAILOVER", st.MasterName); err != nil {
					t.Fatal(err)
				}
			case "DEBUG SLEEP":
				// Long enough to be declared down (1 s) and replaced (a few seconds).
				go st.Master.DoContext(context.Background(), "DEBUG", "SLEEP", "6")
			}
			awaitFailover(t, st)
			switched := time.Now()
			// The holder releases on the new master only: a release that reached the old one before
			// it learnt that it is a replica would be lost with its writes.
			testkit.Eventually(t, 10*time.Second, func() error {
				if _, ok := holder.Redis().Nodes()[st.Replica.Addr]; !ok {
					return errors.New("the holder's Client has not switched to the new master yet")
				}
				return nil
			})
			released := p.release()
			last := p.await(switched, 10*time.Second)
			t.Logf("%s: switch announced %v after the fault began; all %d waiters acquired %v after the switch (%v after the holder's release, sent %v after the switch)",
				how, switched.Sub(start).Round(time.Millisecond), p.waiters, last.Sub(switched).Round(time.Millisecond),
				last.Sub(released).Round(time.Millisecond), released.Sub(switched).Round(time.Millisecond))
		})
	}
}

// TestClusterFailoverWakesParkedWaiters: waiters parked on a cluster master when its replica takes
// over (CLUSTER FAILOVER, the old master staying up as the new one's replica). Redis 7 ends sharded
// subscriptions on a master that loses its slots; the notifier must subscribe again on the new
// master, not on the old one, which serves sharded subscriptions as a replica and so would accept
// them, deaf to what the master publishes.
func TestClusterFailoverWakesParkedWaiters(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	holder := tg.Client(t, parkedOpts...)
	waiting := []*redisync.Client{tg.Client(t, parkedOpts...), tg.Client(t, parkedOpts...)}
	p := park(t, cl.Servers(), holder, waiting, tag)
	i := int(send.Slot(tag)) * len(cl.Masters) / 16384
	replica := cl.Replicas[i]
	start := time.Now()
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
	switched := time.Now()
	released := p.release()
	last := p.await(switched, 10*time.Second)
	t.Logf("CLUSTER FAILOVER: promoted %v after it was asked; all %d waiters acquired %v after the promotion (%v after the holder's release)",
		switched.Sub(start).Round(time.Millisecond), p.waiters, last.Sub(switched).Round(time.Millisecond), last.Sub(released).Round(time.Millisecond))
}
