package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/spinlock"
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

// Row: a replica lags (stopped with SIGSTOP for 2 s) under blocking acquisitions, with the default
// replica acknowledgement. Every blocking call waits it out within its bound and acquires: the
// waiters of every primitive, woken by releases made during the lag, and calls that start during it
// on free objects. A call whose bound ends first returns ErrNotReplicated and leaves nothing held.
// Afterwards master and replica hold exactly what the holders hold, and nothing once released.
func TestReplicaPausedUnderBlockingAcquisitions(t *testing.T) {
	st := redistest.StartSentinel(t)
	client := func() *redisync.Client {
		c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testkit.CloseClean(t, c) })
		return c
	}
	a, b := client(), client()
	ctx := context.Background()
	type blocking struct {
		name    string
		acquire func(ctx context.Context, c *redisync.Client) (release func() error, err error)
	}
	lockOf := func(l interface {
		Lock(context.Context) (context.Context, error)
		Unlock(context.Context) error
	}, err error) func(context.Context) (func() error, error) {
		if err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context) (func() error, error) {
			held, err := l.Lock(ctx)
			return func() error { return l.Unlock(held) }, err
		}
	}
	cases := []blocking{
		{"lag-rlock", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			return lockOf(rlock.New(c, "lag-rlock", rlock.WithFencing()))(ctx)
		}},
		{"lag-fair", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			return lockOf(fairlock.New(c, "lag-fair"))(ctx)
		}},
		{"lag-spin", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			return lockOf(spinlock.New(c, "lag-spin"))(ctx)
		}},
		{"lag-rw", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			rw, err := rwlock.New(c, "lag-rw")
			if err != nil {
				t.Fatal(err)
			}
			return lockOf(rw.WriteLock(), nil)(ctx)
		}},
		{"lag-group", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			return lockOf(multilock.NewGroup(c, "lag-group", []string{"x", "y"}))(ctx)
		}},
		{"lag-sem", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			s, _ := semaphore.New(c, "lag-sem")
			return func() error { return s.Release(ctx, 1) }, s.Acquire(ctx, 1)
		}},
		{"lag-exp", func(ctx context.Context, c *redisync.Client) (func() error, error) {
			e, _ := semaphore.NewExpirable(c, "lag-exp")
			ids, err := e.Acquire(ctx, 1)
			return func() error { return e.Release(ctx, ids...) }, err
		}},
	}
	s, _ := semaphore.New(a, "lag-sem")
	e, _ := semaphore.NewExpirable(a, "lag-exp")
	if _, err := s.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rdb.Close)
	t.Cleanup(func() { testkit.Do(t, rdb, "DEL", "lag-sem", "lag-exp", "redisson_lock_token:{lag-rlock}") })

	// A holds everything; B waits for each, with 8 s left.
	var releases []func() error
	for _, tc := range cases {
		release, err := tc.acquire(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		releases = append(releases, release)
	}
	type outcome struct {
		name    string
		release func() error
		err     error
		took    time.Duration
	}
	results := make(chan outcome, 2*len(cases))
	bound, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	for _, tc := range cases {
		go func() {
			start := time.Now()
			release, err := tc.acquire(bound, b)
			results <- outcome{tc.name, release, err, time.Since(start)}
		}()
	}
	testkit.Eventually(t, 10*time.Second, func() error { // every waiter but the spinning one parked
		if n := testkit.Waiters(b); n < len(cases)-1 {
			return fmt.Errorf("%d waiters", n)
		}
		return nil
	})

	if err := st.Replica.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(2 * time.Second)
		st.Replica.Resume()
	}()
	t.Cleanup(func() { <-resumed })
	for i, release := range releases { // releases do not wait for replicas
		if err := release(); err != nil {
			t.Fatalf("%s: release: %v", cases[i].name, err)
		}
	}
	// A call that starts during the lag on a free object waits it out too...
	go func() {
		start := time.Now()
		release, err := lockOf(rlock.New(a, "lag-free"))(bound)
		results <- outcome{"lag-free", release, err, time.Since(start)}
	}()
	// ...and one whose bound ends first gets ErrNotReplicated, with nothing left behind.
	short := newLock(t, a, "lag-short")
	if _, err := short.TryLock(ctx, 300*time.Millisecond); !errors.Is(err, redisync.ErrNotReplicated) {
		t.Errorf("TryLock(300ms) during the lag: %v, want ErrNotReplicated", err)
	}
	if locked, err := short.IsLocked(ctx); err != nil || locked {
		t.Errorf("lag-short left locked after ErrNotReplicated (%v, %v): given back before the call returned", locked, err)
	}

	for range len(cases) + 1 {
		r := <-results
		if r.err != nil {
			t.Errorf("%s: %v after %v: a 2 s lag of the replica ended a call with 8 s left", r.name, r.err, r.took)
			continue
		}
		if got := time.Since(paused); got < time.Second {
			t.Logf("%s: acquired %v into the lag", r.name, got)
		}
		if err := r.release(); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
	<-resumed
	// Nothing held on the master, nor on the replica once it caught up; the permits are back.
	for _, srv := range []*redistest.Server{st.Master, st.Replica} {
		testkit.Eventually(t, 10*time.Second, func() error {
			for _, key := range []string{"lag-rlock", "lag-fair", "lag-spin", "lag-rw", "lag-group", "lag-free", "lag-short", "{lag-exp}:timeout"} {
				if n, err := srv.Do("EXISTS", key); err != nil || n != "0" {
					return fmt.Errorf("%s: %s still exists (%v)", srv.Addr, key, err)
				}
			}
			for _, key := range []string{"lag-sem", "lag-exp"} {
				if n, err := srv.Do("GET", key); err != nil || n != "1" {
					return fmt.Errorf("%s: %s holds %q permits, want 1 (%v)", srv.Addr, key, n, err)
				}
			}
			return nil
		})
	}
}

// With the default acknowledgement, an acquisition waits for the first replica only: with two
// replicas, one of them stopped, every acquisition is acknowledged by the other at once, and the
// WAIT each sends asks for one replica. AllReplicas asks for both (and gets one, after its timeout).
func TestReplicaAckWaitsForTheFirstReplica(t *testing.T) {
	st := redistest.StartSentinel(t)
	second := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(st.Master.Port), "--repl-diskless-sync-delay", "0")
	testkit.Eventually(t, 10*time.Second, func() error {
		info, err := st.Master.Do("INFO", "replication")
		if err != nil || !strings.Contains(info, "connected_slaves:2") {
			return fmt.Errorf("the master has not both replicas yet: %v", err)
		}
		if info, err := second.Do("INFO", "replication"); err != nil || !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("the second replica is not in sync yet: %v", err)
		}
		return nil
	})
	waits := monitorWaits(t, st.Master)
	if err := second.Pause(); err != nil {
		t.Fatal(err)
	}
	defer second.Resume()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	l := newLock(t, c, "ack-first")
	for range 5 {
		held, err := l.TryLock(context.Background(), 0) // a single try: acknowledged at once, or not at all
		if err != nil {
			t.Fatalf("an acquisition with one of two replicas stopped: %v", err)
		}
		if err := l.Unlock(held); err != nil {
			t.Fatal(err)
		}
	}
	all, err := redisync.New(rueidis.ClientOption{InitAddress: []string{st.Master.Addr}, DisableCache: true},
		redisync.WithReplicaAck(redisync.AllReplicas, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, all) })
	la := newLock(t, all, "ack-all")
	if err := la.Unlock(mustLock(t, la)); err != nil {
		t.Fatal(err)
	}
	got := waits()
	if len(got) < 6 || !slices.Equal(got[:5], []string{"1", "1", "1", "1", "1"}) || got[len(got)-1] != "2" {
		t.Fatalf("WAIT asked for %v replicas, want 1 for each of the default's 5 acquisitions, then 2 for AllReplicas'", got)
	}
}

// monitorWaits watches s's commands; the func it returns gives how many replicas each WAIT asked for,
// in order.
func monitorWaits(t *testing.T, s *redistest.Server) func() []string {
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := bufio.NewReader(conn)
	if _, err := fmt.Fprintf(conn, "MONITOR\r\n"); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(ok, "+OK") {
		t.Fatalf("MONITOR: %q, %v", ok, err)
	}
	var mu sync.Mutex
	var waits []string
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, rest, ok := strings.Cut(line, `] "WAIT" `); ok {
				if args := monitorArgs(rest); len(args) > 0 {
					mu.Lock()
					waits = append(waits, args[0])
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		time.Sleep(100 * time.Millisecond) // the feed's last lines
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(waits)
	}
}
