package reliability

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/spinlock"
)

// The exactly-once matrix: every state-changing call of every primitive, with the network losing
// either the reply of its script (Redis applied it; the client never heard) or the request (Redis
// never saw it), on a standalone server and on a cluster. Each case checks that the call answers
// what a fault-free call answers, and that after it and one release Redis holds exactly what one
// application of each leaves. The proxy (redistest.Proxy) cuts the connection at the first script
// call (EVALSHA, EVAL, FCALL, ...) that has the object's key among its KEYS, however the library
// builds its scripts, so these tests use nothing but the public API.

// eoCall bounds each call of a case: a faulted call that hangs fails the case instead of the run.
const eoCall = 60 * time.Second

var eoCuts = []redistest.Cut{redistest.LoseReply, redistest.LoseRequest}

// eoEnv is a deployment whose clients all connect through proxies.
type eoEnv struct {
	tg  *testkit.Target // the proxies' addresses, for the library's clients
	arm func(redistest.Rule) *redistest.Fault
	rdb rueidis.Client // a plain client, for reading what Redis holds
}

func eoStandalone(t *testing.T) *eoEnv {
	srv := redistest.Start(t)
	p := redistest.StartProxy(t, srv.Addr)
	direct := &testkit.Target{Name: "standalone", Addrs: []string{srv.Addr}, Servers: []*redistest.Server{srv}}
	return &eoEnv{
		tg:  &testkit.Target{Name: "standalone", Addrs: []string{p.Addr()}, Servers: direct.Servers},
		arm: p.Arm,
		rdb: direct.Redis(t),
	}
}

func eoCluster(t *testing.T) *eoEnv {
	cl := redistest.StartProxiedCluster(t, 3, 0)
	tg := &testkit.Target{Name: "cluster", Addrs: cl.Addrs, Servers: cl.Servers()}
	// The nodes announce their proxies, so a plain client goes through them too: it sends no
	// script, so no fault matches its commands.
	return &eoEnv{tg: tg, arm: cl.Arm, rdb: tg.Redis(t)}
}

// eo is one case in one fault mode.
type eo struct {
	t      *testing.T
	env    *eoEnv
	cut    redistest.Cut
	name   string // the object's name, unique to the case and mode
	c1, c2 *redisync.Client
	ctx    context.Context
	next   *redistest.Fault // TestExactlyOnceBounded: the fault faultNext armed
}

type eoCase struct {
	name string
	run  func(x *eo)
}

func runMatrix(t *testing.T, env *eoEnv, cases []eoCase) {
	for _, tc := range cases {
		for _, cut := range eoCuts {
			t.Run(tc.name+"/"+strings.ReplaceAll(cut.String(), " ", "-"), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*eoCall)
				defer cancel()
				slug := strings.NewReplacer("/", "-", " ", "-", "(", "", ")", "").Replace(tc.name)
				x := &eo{
					t: t, env: env, cut: cut, ctx: ctx,
					name: fmt.Sprintf("eo-%s-%s", slug, strings.Fields(cut.String())[0]),
					c1:   env.tg.Client(t),
					c2:   env.tg.Client(t),
				}
				tc.run(x)
			})
		}
	}
}

// TestExactlyOnceStandalone is the matrix on a standalone server.
func TestExactlyOnceStandalone(t *testing.T) { runMatrix(t, eoStandalone(t), eoCases) }

// TestExactlyOnceCluster is the matrix on a 3-master cluster.
func TestExactlyOnceCluster(t *testing.T) { runMatrix(t, eoCluster(t), eoCases) }

var eoCases = []eoCase{
	{"rlock/Lock", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		f := x.arm(x.name)
		held, err := l.Lock(x.ctx)
		x.fired(f)
		if !x.ok(err, "Lock") {
			x.free(x.name, "a failed Lock")
			return
		}
		x.unlock(l, held)
		x.free(x.name, "one Lock and one Unlock")
	}},
	{"rlock/TryLock", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		f := x.arm(x.name)
		held, err := l.TryLock(x.ctx, eoCall)
		x.fired(f)
		if !x.ok(err, "TryLock") {
			x.free(x.name, "a failed TryLock")
			return
		}
		x.unlock(l, held)
		x.free(x.name, "one TryLock and one Unlock")
	}},
	{"rlock/re-entry", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		outer := x.lock(l)
		f := x.arm(x.name)
		inner, err := l.Lock(outer)
		x.fired(f)
		if !x.ok(err, "Lock through the held ctx") {
			x.holdCount(x.name, x.c1, outer, 1, "a failed re-entry")
			x.unlock(l, outer)
			x.free(x.name, "a failed re-entry and one Unlock of the outer hold")
			return
		}
		x.holdCount(x.name, x.c1, inner, 2, "one Lock and one re-entry")
		x.unlock(l, inner)
		x.unlock(l, outer)
		x.free(x.name, "two Locks and two Unlocks")
	}},
	{"rlock/Unlock", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		held := x.lock(l)
		f := x.arm(x.name)
		err := l.Unlock(held)
		x.fired(f)
		x.ok(err, "Unlock")
		x.free(x.name, "one Lock and one Unlock")
	}},
	{"rlock/Unlock-of-re-entered", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		outer := x.lock(l)
		inner := x.lockWith(l, outer)
		f := x.arm(x.name)
		err := l.Unlock(inner)
		x.fired(f)
		x.ok(err, "Unlock of the inner hold")
		x.holdCount(x.name, x.c1, outer, 1, "two Locks and the inner Unlock")
		x.unlock(l, outer)
		x.free(x.name, "two Locks and two Unlocks")
	}},
	{"rlock/ForceUnlock", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		held := x.lock(l)
		f := x.arm(x.name)
		was, err := l.ForceUnlock(x.ctx)
		x.fired(f)
		if x.ok(err, "ForceUnlock") {
			assert.True(x.t, was, "ForceUnlock of a held lock (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.free(x.name, "one Lock and one ForceUnlock")
		// The hold on this Client ended with the forced unlock: its Unlock finds nothing.
		assert.ErrorIs(x.t, l.Unlock(held), redisync.ErrNotHeld)
	}},
	{"rlock/LockFor", func(x *eo) {
		l := x.rlock(x.c1, x.name)
		f := x.arm(x.name)
		held, err := l.LockFor(x.ctx, time.Hour)
		x.fired(f)
		if !x.ok(err, "LockFor(1h)") {
			x.free(x.name, "a failed LockFor")
			return
		}
		x.holdCount(x.name, x.c1, held, 1, "one LockFor")
		x.leaseLeft(x.name, time.Hour, "one LockFor(1h)")
		x.unlock(l, held)
		x.free(x.name, "one LockFor and one Unlock")
	}},
	{"rlock/Extend", func(x *eo) { extendCase(x, x.rlock(x.c1, x.name), x.name) }},
	{"rlock/hand-over-claim", rlockHandOver},
	{"rlock/waiter-try", rlockWaiterTry},
	{"spinlock/Lock", func(x *eo) {
		l := x.spin(x.c1, x.name)
		f := x.arm(x.name)
		held, err := l.Lock(x.ctx)
		x.fired(f)
		if !x.ok(err, "Lock") {
			x.free(x.name, "a failed Lock")
			return
		}
		x.unlock(l, held)
		x.free(x.name, "one Lock and one Unlock")
	}},
	{"spinlock/re-entry", func(x *eo) {
		l := x.spin(x.c1, x.name)
		outer := x.lock(l)
		f := x.arm(x.name)
		inner, err := l.Lock(outer)
		x.fired(f)
		if !x.ok(err, "Lock through the held ctx") {
			x.holdCount(x.name, x.c1, outer, 1, "a failed re-entry")
			x.unlock(l, outer)
			x.free(x.name, "a failed re-entry and one Unlock of the outer hold")
			return
		}
		x.holdCount(x.name, x.c1, inner, 2, "one Lock and one re-entry")
		x.unlock(l, inner)
		x.unlock(l, outer)
		x.free(x.name, "two Locks and two Unlocks")
	}},
	{"spinlock/Unlock", func(x *eo) {
		l := x.spin(x.c1, x.name)
		held := x.lock(l)
		f := x.arm(x.name)
		err := l.Unlock(held)
		x.fired(f)
		x.ok(err, "Unlock")
		x.free(x.name, "one Lock and one Unlock")
	}},
	{"spinlock/spinning-try", spinWaiterTry},
	{"fairlock/Lock", func(x *eo) {
		l := x.fair(x.c1, x.name)
		f := x.arm(x.name)
		held, err := l.Lock(x.ctx)
		x.fired(f)
		if !x.ok(err, "Lock") {
			x.fairFree(x.name, "a failed Lock")
			return
		}
		x.unlock(l, held)
		x.fairFree(x.name, "one Lock and one Unlock")
	}},
	{"fairlock/TryLock", func(x *eo) {
		l := x.fair(x.c1, x.name)
		f := x.arm(x.name)
		held, err := l.TryLock(x.ctx, eoCall)
		x.fired(f)
		if !x.ok(err, "TryLock") {
			x.fairFree(x.name, "a failed TryLock")
			return
		}
		x.unlock(l, held)
		x.fairFree(x.name, "one TryLock and one Unlock")
	}},
	{"fairlock/Extend", func(x *eo) { extendCase(x, x.fair(x.c1, x.name), x.name) }},
	{"fairlock/queued-waiter", fairQueued},
	{"fairlock/Unlock", func(x *eo) {
		l := x.fair(x.c1, x.name)
		held := x.lock(l)
		f := x.arm(x.name)
		err := l.Unlock(held)
		x.fired(f)
		x.ok(err, "Unlock")
		x.fairFree(x.name, "one Lock and one Unlock")
	}},
	{"rwlock/read-Lock", func(x *eo) { rwLockCase(x, true) }},
	{"rwlock/read-Unlock", func(x *eo) { rwUnlockCase(x, true) }},
	{"rwlock/write-Lock", func(x *eo) { rwLockCase(x, false) }},
	{"rwlock/write-Unlock", func(x *eo) { rwUnlockCase(x, false) }},
	{"rwlock/read-LockFor", func(x *eo) {
		rw, err := rwlock.New(x.c1, x.name)
		require.NoError(x.t, err)
		f := x.arm(x.name)
		held, err := rw.ReadLock().LockFor(x.ctx, time.Hour)
		x.fired(f)
		if !x.ok(err, "read LockFor(1h)") {
			x.rwFree("a failed read LockFor")
			return
		}
		x.leaseLeft(x.readLease(x.c1, held, 1), time.Hour, "one read LockFor(1h)")
		x.unlock(rw.ReadLock(), held)
		x.rwFree("one read LockFor and one Unlock")
	}},
	{"rwlock/read-Extend", func(x *eo) {
		rw, err := rwlock.New(x.c1, x.name)
		require.NoError(x.t, err)
		extendCase(x, rw.ReadLock(), x.name)
	}},
	{"rwlock/write-Extend", func(x *eo) {
		rw, err := rwlock.New(x.c1, x.name)
		require.NoError(x.t, err)
		extendCase(x, rw.WriteLock(), x.name)
	}},
	{"semaphore/TrySetPermits", func(x *eo) {
		s := x.sem(x.c1, x.name)
		f := x.arm(x.name)
		set, err := s.TrySetPermits(x.ctx, 3)
		x.fired(f)
		if x.ok(err, "TrySetPermits(3)") {
			assert.True(x.t, set, "TrySetPermits(3) on a new semaphore (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.count(x.name, 3, "TrySetPermits(3)")
	}},
	{"semaphore/Acquire", func(x *eo) {
		s := x.sem(x.c1, x.name)
		x.setPermits(s, 2)
		f := x.arm(x.name)
		err := s.Acquire(x.ctx, 1)
		x.fired(f)
		if !x.ok(err, "Acquire(1)") {
			x.count(x.name, 2, "TrySetPermits(2) and a failed Acquire(1)")
			return
		}
		x.count(x.name, 1, "TrySetPermits(2) and one Acquire(1)")
		require.NoError(x.t, s.Release(x.ctx, 1))
		x.count(x.name, 2, "TrySetPermits(2), one Acquire(1) and one Release(1)")
	}},
	{"semaphore/waiter-Acquire", semWaiterAcquire},
	{"semaphore/Release", func(x *eo) {
		s := x.sem(x.c1, x.name)
		x.setPermits(s, 2)
		require.NoError(x.t, s.Acquire(x.ctx, 1))
		f := x.arm(x.name)
		err := s.Release(x.ctx, 1)
		x.fired(f)
		x.ok(err, "Release(1)")
		x.count(x.name, 2, "TrySetPermits(2), one Acquire(1) and one Release(1)")
	}},
	{"semaphore/AddPermits", func(x *eo) {
		s := x.sem(x.c1, x.name)
		x.setPermits(s, 1)
		f := x.arm(x.name)
		err := s.AddPermits(x.ctx, 2)
		x.fired(f)
		x.ok(err, "AddPermits(2)")
		x.count(x.name, 3, "TrySetPermits(1) and one AddPermits(2)")
	}},
	{"semaphore/Drain", func(x *eo) {
		s := x.sem(x.c1, x.name)
		x.setPermits(s, 3)
		f := x.arm(x.name)
		n, err := s.Drain(x.ctx)
		x.fired(f)
		if x.ok(err, "Drain") {
			assert.EqualValues(x.t, 3, n, "Drain of 3 permits (%s); a fault-free one returns 3", x.cut)
		}
		x.count(x.name, 0, "TrySetPermits(3) and one Drain")
	}},
	{"semaphore/ReleaseIfExists", func(x *eo) {
		s := x.sem(x.c1, x.name)
		x.setPermits(s, 2)
		require.NoError(x.t, s.Acquire(x.ctx, 1))
		f := x.arm(x.name)
		released, err := s.ReleaseIfExists(x.ctx, 1)
		x.fired(f)
		if x.ok(err, "ReleaseIfExists(1)") {
			assert.True(x.t, released, "ReleaseIfExists(1) of an existing semaphore (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.count(x.name, 2, "TrySetPermits(2), one Acquire(1) and one ReleaseIfExists(1)")
	}},
	{"expirable/Acquire", func(x *eo) {
		e := x.expirable(x.c1, x.name)
		x.setExpirable(e, 2)
		f := x.arm(x.name)
		ids, err := e.Acquire(x.ctx, 1)
		x.fired(f)
		if !x.ok(err, "Acquire(1)") {
			x.expirableState(2, 0, "TrySetPermits(2) and a failed Acquire(1)")
			return
		}
		assert.Len(x.t, ids, 1, "Acquire(1) (%s) returned %d ids", x.cut, len(ids))
		x.expirableState(1, 1, "TrySetPermits(2) and one Acquire(1)")
		require.NoError(x.t, e.Release(x.ctx, ids...))
		x.expirableState(2, 0, "TrySetPermits(2), one Acquire(1) and the Release of its id")
	}},
	{"expirable/AcquireFor", func(x *eo) {
		e := x.expirable(x.c1, x.name)
		x.setExpirable(e, 2)
		f := x.arm(x.name)
		ids, err := e.AcquireFor(x.ctx, 1, time.Hour)
		x.fired(f)
		if !x.ok(err, "AcquireFor(1, 1h)") {
			x.expirableState(2, 0, "TrySetPermits(2) and a failed AcquireFor(1)")
			return
		}
		x.expirableState(1, 1, "TrySetPermits(2) and one AcquireFor(1)")
		left, err := e.LeaseLeft(x.ctx, ids[0])
		require.NoError(x.t, err)
		assert.True(x.t, left > time.Hour-time.Minute && left <= time.Hour, "after AcquireFor(1, 1h) (%s), the permit's lease is %v", x.cut, left)
		require.NoError(x.t, e.Release(x.ctx, ids...))
		x.expirableState(2, 0, "TrySetPermits(2), one AcquireFor(1) and the Release of its id")
	}},
	{"expirable/Release", func(x *eo) {
		e := x.expirable(x.c1, x.name)
		x.setExpirable(e, 2)
		ids, err := e.Acquire(x.ctx, 1)
		require.NoError(x.t, err)
		f := x.arm(x.name)
		err = e.Release(x.ctx, ids...)
		x.fired(f)
		x.ok(err, "Release(id)")
		x.expirableState(2, 0, "TrySetPermits(2), one Acquire(1) and the Release of its id")
	}},
	{"expirable/AddPermits", func(x *eo) {
		e := x.expirable(x.c1, x.name)
		x.setExpirable(e, 1)
		f := x.arm(x.name)
		err := e.AddPermits(x.ctx, 2)
		x.fired(f)
		x.ok(err, "AddPermits(2)")
		x.expirableState(3, 0, "TrySetPermits(1) and one AddPermits(2)")
	}},
	{"expirable/TrySetPermits", func(x *eo) {
		e := x.expirable(x.c1, x.name)
		f := x.arm(x.name)
		set, err := e.TrySetPermits(x.ctx, 2)
		x.fired(f)
		if x.ok(err, "TrySetPermits(2)") {
			assert.True(x.t, set, "TrySetPermits(2) on a new semaphore (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.expirableState(2, 0, "TrySetPermits(2)")
	}},
	{"countdown/TrySetCount", func(x *eo) {
		l := x.latch(x.c1, x.name)
		f := x.arm(x.name)
		set, err := l.TrySetCount(x.ctx, 2)
		x.fired(f)
		if x.ok(err, "TrySetCount(2)") {
			assert.True(x.t, set, "TrySetCount(2) on a new latch (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.count(x.name, 2, "TrySetCount(2)")
	}},
	{"countdown/CountDown", func(x *eo) {
		l := x.latch(x.c1, x.name)
		set, err := l.TrySetCount(x.ctx, 2)
		require.NoError(x.t, err)
		require.True(x.t, set)
		f := x.arm(x.name)
		err = l.CountDown(x.ctx)
		x.fired(f)
		x.ok(err, "CountDown")
		x.count(x.name, 1, "TrySetCount(2) and one CountDown")
	}},
	{"ratelimit/Acquire", func(x *eo) {
		l, err := ratelimit.New(x.c1, x.name)
		require.NoError(x.t, err)
		set, err := l.TrySetRate(x.ctx, ratelimit.Config{Rate: 5, Interval: time.Hour})
		require.NoError(x.t, err)
		require.True(x.t, set)
		f := x.arm(x.name)
		err = l.Acquire(x.ctx, 1)
		x.fired(f)
		if !x.ok(err, "Acquire(1)") {
			x.window(0, "a rate of 5 and a failed Acquire(1)")
			return
		}
		x.window(1, "a rate of 5 and one Acquire(1)")
	}},
	{"ratelimit/waiter-Acquire", rateWaiterAcquire},
	{"ratelimit/Release", func(x *eo) {
		l := x.limiter(5)
		require.NoError(x.t, l.Acquire(x.ctx, 3))
		f := x.arm(x.name)
		err := l.Release(x.ctx, 2)
		x.fired(f)
		x.ok(err, "Release(2)")
		x.limiterState("5", "4", 1, "a rate of 5, one Acquire(3) and one Release(2)")
	}},
	{"ratelimit/UpdateRate-KeepState", func(x *eo) {
		l := x.limiter(5)
		require.NoError(x.t, l.Acquire(x.ctx, 2))
		f := x.arm(x.name)
		updated, err := l.UpdateRate(x.ctx, ratelimit.Config{Rate: 8, Interval: time.Hour}, ratelimit.KeepState())
		x.fired(f)
		if x.ok(err, "UpdateRate(8, KeepState)") {
			assert.True(x.t, updated, "UpdateRate of a set limiter (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.limiterState("8", "6", 1, "a rate of 5, one Acquire(2) and one UpdateRate(8, KeepState)")
	}},
	{"ratelimit/ClearExpire", func(x *eo) {
		l := x.limiter(5)
		require.NoError(x.t, l.Acquire(x.ctx, 1))
		_, err := l.Expire(x.ctx, time.Hour)
		require.NoError(x.t, err)
		f := x.arm(x.name)
		cleared, err := l.ClearExpire(x.ctx)
		x.fired(f)
		if x.ok(err, "ClearExpire") {
			// A second PERSIST finds no TTL: only the first send's answer is true.
			assert.True(x.t, cleared, "ClearExpire of a limiter with a TTL (%s) answered false; a fault-free one answers true", x.cut)
		}
		for _, key := range []string{x.name, "{" + x.name + "}:value", "{" + x.name + "}:permits"} {
			assert.EqualValues(x.t, -1, x.int("PTTL", key), "after ClearExpire (%s), %s has a TTL. Redis holds: %s", x.cut, key, x.holds())
		}
	}},
	{"multilock/sub-lock-Lock", func(x *eo) {
		a, b := x.rlock(x.c1, x.name+"-a"), x.rlock(x.c1, x.name+"-b")
		m, err := multilock.New(a, b)
		require.NoError(x.t, err)
		f := x.arm(b.Name())
		held, err := m.Lock(x.ctx)
		x.fired(f)
		if !x.ok(err, "MultiLock.Lock") {
			x.free(a.Name(), "a failed MultiLock.Lock")
			x.free(b.Name(), "a failed MultiLock.Lock")
			return
		}
		require.NoError(x.t, m.Unlock(held))
		x.free(a.Name(), "one MultiLock.Lock and one Unlock")
		x.free(b.Name(), "one MultiLock.Lock and one Unlock")
	}},
	{"multilock/Group-Lock", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		f := x.arm(x.name)
		held, err := g.Lock(x.ctx)
		x.fired(f)
		if !x.ok(err, "Group.Lock") {
			x.groupFree("a failed Group.Lock")
			return
		}
		x.groupCounts(g, x.c1, held, 1, "one Group.Lock")
		x.unlock(g, held)
		x.groupFree("one Group.Lock and one Unlock")
	}},
	{"multilock/Group-LockFor", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		f := x.arm(x.name)
		held, err := g.LockFor(x.ctx, time.Hour)
		x.fired(f)
		if !x.ok(err, "Group.LockFor(1h)") {
			x.groupFree("a failed Group.LockFor")
			return
		}
		x.groupCounts(g, x.c1, held, 1, "one Group.LockFor")
		x.leaseLeft(x.name, time.Hour, "one Group.LockFor(1h)")
		x.unlock(g, held)
		x.groupFree("one Group.LockFor and one Unlock")
	}},
	{"multilock/Group-Extend", func(x *eo) { extendCase(x, x.group(x.c1, "a", "b", "c"), x.name) }},
	{"multilock/Group-TryLock", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		f := x.arm(x.name)
		held, err := g.TryLock(x.ctx, eoCall)
		x.fired(f)
		if !x.ok(err, "Group.TryLock") {
			x.groupFree("a failed Group.TryLock")
			return
		}
		x.unlock(g, held)
		x.groupFree("one Group.TryLock and one Unlock")
	}},
	{"multilock/Group-re-entry", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		outer := x.lock(g)
		f := x.arm(x.name)
		inner, err := g.Lock(outer)
		x.fired(f)
		if !x.ok(err, "Group.Lock through the held ctx") {
			x.groupCounts(g, x.c1, outer, 1, "a failed re-entry")
			x.unlock(g, outer)
			x.groupFree("a failed re-entry and one Unlock of the outer hold")
			return
		}
		x.groupCounts(g, x.c1, inner, 2, "one Group.Lock and one re-entry")
		x.unlock(g, inner)
		x.unlock(g, outer)
		x.groupFree("two Group.Locks and two Unlocks")
	}},
	{"multilock/Group-Unlock", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		held := x.lock(g)
		f := x.arm(x.name)
		err := g.Unlock(held)
		x.fired(f)
		x.ok(err, "Group.Unlock")
		x.groupFree("one Group.Lock and one Unlock")
	}},
	{"multilock/Group-Unlock-of-re-entered", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		outer := x.lock(g)
		inner := x.lockWith(g, outer)
		f := x.arm(x.name)
		err := g.Unlock(inner)
		x.fired(f)
		x.ok(err, "Group.Unlock of the inner hold")
		x.groupCounts(g, x.c1, outer, 1, "two Group.Locks and the inner Unlock")
		x.unlock(g, outer)
		x.groupFree("two Group.Locks and two Unlocks")
	}},
	{"multilock/Group-ForceUnlock", func(x *eo) {
		g := x.group(x.c1, "a", "b", "c")
		held := x.lock(g)
		f := x.arm(x.name)
		was, err := g.ForceUnlock(x.ctx)
		x.fired(f)
		if x.ok(err, "Group.ForceUnlock") {
			assert.True(x.t, was, "ForceUnlock of a held group (%s) answered false; a fault-free one answers true", x.cut)
		}
		x.groupFree("one Group.Lock and one ForceUnlock")
		assert.ErrorIs(x.t, g.Unlock(held), redisync.ErrNotHeld)
	}},
}

// rlockHandOver faults the try by which a waiter claims the lock that a release handed it. The
// release's message is lost with the waiter's Pub/Sub connection (the proxy cuts the connection that
// would deliver it), so the waiter learns of its grant by a try of its own once it has subscribed
// again: that try is the one faulted.
func rlockHandOver(x *eo) {
	l1, l2 := x.rlock(x.c1, x.name), x.rlock(x.c2, x.name)
	h1 := x.lock(l1)
	type result struct {
		held context.Context
		err  error
	}
	res := make(chan result, 1)
	go func() {
		held, err := l2.Lock(x.ctx)
		res <- result{held, err}
	}()
	x.recorded(x.c2) // the release hands the lock to it
	lost := x.env.arm(redistest.Rule{Channel: x.name})
	claim := x.env.arm(redistest.Rule{Cut: x.cut, Key: x.name, Match: from(x.c2)})
	x.unlock(l1, h1)
	x.fired(lost)
	x.fired(claim)
	var r result
	select {
	case r = <-res:
	case <-time.After(eoCall):
		x.t.Fatalf("the waiter did not return within %v after its claim was faulted (%s)", eoCall, x.holds())
	}
	if !x.ok(r.err, "the waiter's Lock (its claim faulted)") {
		x.free(x.name, "a hand-over whose claim failed")
		return
	}
	x.holdCount(x.name, x.c2, r.held, 1, "a hand-over to the waiter")
	x.unlock(l2, r.held)
	x.free(x.name, "a Lock, a hand-over and two Unlocks")
}

// rlockWaiterTry faults the try by which a waiter acquires a lock that a Java process (Redisson's
// layout, written by hand) held and released: no hand-over, so the waiter's own try after the
// release acquires, and it is not the waiter's first try.
func rlockWaiterTry(x *eo) {
	c := x.env.tg.Client(x.t, redisync.WithRecheckInterval(500*time.Millisecond))
	l := x.rlock(c, x.name)
	x.exec("HSET", x.name, "java-client:1", "1")
	x.exec("PEXPIRE", x.name, "60000")
	type result struct {
		held context.Context
		err  error
	}
	res := make(chan result, 1)
	go func() {
		held, err := l.Lock(x.ctx)
		res <- result{held, err}
	}()
	x.recorded(c)
	f := x.arm(x.name, from(c))
	// Redisson's unlock: the key goes, and 0 on the lock's channel (sharded on a cluster).
	x.exec("DEL", x.name)
	x.exec(x.publish(), "redisson_lock__channel:{"+x.name+"}", "0")
	x.fired(f)
	var r result
	select {
	case r = <-res:
	case <-time.After(eoCall):
		x.t.Fatalf("the waiter did not return within %v after its try was faulted (%s)", eoCall, x.holds())
	}
	if !x.ok(r.err, "the waiter's Lock (its acquiring try faulted)") {
		x.free(x.name, "a failed Lock")
		return
	}
	x.holdCount(x.name, c, r.held, 1, "one Lock")
	x.unlock(l, r.held)
	x.free(x.name, "one Lock and one Unlock")
}

// spinWaiterTry faults the try by which a spinning waiter takes a lock that a Java process
// (Redisson's layout, written by hand) held and released: not its first try, and the only way it
// learns of the release. The release happens inside the proxy, as the waiter's third try reaches
// it and before that try is forwarded, so that the faulted try is the first to find the lock free
// whatever the machine's load.
func spinWaiterTry(x *eo) {
	l := x.spin(x.c1, x.name, spinlock.WithBackoff(spinlock.ConstantBackoff{Delay: 20 * time.Millisecond}))
	x.exec("HSET", x.name, "java-client:1", "1")
	x.exec("PEXPIRE", x.name, "60000")
	var tries atomic.Int64
	mine := from(x.c1)
	f := x.arm(x.name, func(args []string) bool {
		if !mine(args) || tries.Add(1) < 3 {
			return false
		}
		for _, s := range x.env.tg.Servers {
			s.Do("DEL", x.name) // Redisson's spin unlock: no message; the other nodes refuse it
		}
		return true
	})
	type result struct {
		held context.Context
		err  error
	}
	res := make(chan result, 1)
	go func() {
		held, err := l.Lock(x.ctx)
		res <- result{held, err}
	}()
	x.fired(f)
	var r result
	select {
	case r = <-res:
	case <-time.After(eoCall):
		x.t.Fatalf("the waiter did not return within %v after its try was faulted (%s)", eoCall, x.holds())
	}
	if !x.ok(r.err, "the spinning waiter's Lock (its acquiring try faulted)") {
		x.free(x.name, "a failed Lock")
		return
	}
	x.holdCount(x.name, x.c1, r.held, 1, "one Lock")
	x.unlock(l, r.held)
	x.free(x.name, "one Lock and one Unlock")
}

// recorded waits until a waiter of c is recorded beside the lock (README, Waiting).
func (x *eo) recorded(c *redisync.Client) {
	x.t.Helper()
	waiters := "redisync_lock_waiters:{" + x.name + "}"
	testkit.Eventually(x.t, 20*time.Second, func() error {
		for _, m := range x.strings("ZRANGE", waiters, "0", "-1") {
			if strings.HasPrefix(m, c.ID()+":") {
				return nil
			}
		}
		return fmt.Errorf("no waiter of the Client is recorded in %s: %s", waiters, x.holds())
	})
}

// semWaiterAcquire faults the try by which a waiter takes a permit that a Java process (Redisson's
// release, written by hand: the count raised and published) gave back: no hand-over, so the waiter's
// own try takes it, and it is not the waiter's first try.
func semWaiterAcquire(x *eo) {
	c := x.env.tg.Client(x.t, redisync.WithRecheckInterval(500*time.Millisecond))
	s1, s2 := x.sem(x.c1, x.name), x.sem(c, x.name)
	x.setPermits(s1, 1)
	require.NoError(x.t, s1.Acquire(x.ctx, 1))
	res := make(chan error, 1)
	go func() { res <- s2.Acquire(x.ctx, 1) }()
	waiters := "redisync_semaphore_waiters:{" + x.name + "}" // README, Waiting
	testkit.Eventually(x.t, 20*time.Second, func() error {
		if x.int("EXISTS", waiters) == 0 {
			return fmt.Errorf("the waiter is not recorded in %s: %s", waiters, x.holds())
		}
		return nil
	})
	f := x.arm(x.name)
	x.exec("INCRBY", x.name, "2")
	x.exec(x.publish(), "redisson_sc:{"+x.name+"}", "2")
	x.fired(f)
	var err error
	select {
	case err = <-res:
	case <-time.After(eoCall):
		x.t.Fatalf("the waiter did not return within %v after its try was faulted (%s)", eoCall, x.holds())
	}
	if !x.ok(err, "the waiter's Acquire(1) (its acquiring try faulted)") {
		x.count(x.name, 2, "TrySetPermits(1), Acquire(1), 2 permits added and a failed Acquire(1)")
		return
	}
	x.count(x.name, 1, "TrySetPermits(1), Acquire(1), 2 permits added and one Acquire(1)")
	require.NoError(x.t, s2.Release(x.ctx, 1))
	require.NoError(x.t, s1.Release(x.ctx, 1))
	x.count(x.name, 3, "3 permits in all, two Acquire(1) and two Release(1)")
}

// rateWaiterAcquire faults the try by which a waiter is charged once the window has room again: its
// second try, after the first found the window full.
func rateWaiterAcquire(x *eo) {
	const interval = 3 * time.Second // a first try later than this would find room: no wait to fault
	l1, err := ratelimit.New(x.c1, x.name)
	require.NoError(x.t, err)
	l2, err := ratelimit.New(x.c2, x.name)
	require.NoError(x.t, err)
	set, err := l1.TrySetRate(x.ctx, ratelimit.Config{Rate: 2, Interval: interval})
	require.NoError(x.t, err)
	require.True(x.t, set)
	require.NoError(x.t, l1.Acquire(x.ctx, 2))
	// The waiter's first try, seen and let through; the fault is armed for the one after it.
	first := x.env.arm(redistest.Rule{Cut: x.cut, Key: x.name, Nth: 1 << 30})
	defer first.Disarm()
	res := make(chan error, 1)
	go func() { res <- l2.Acquire(x.ctx, 1) }()
	testkit.Eventually(x.t, 20*time.Second, func() error {
		if first.Seen() == 0 {
			return errors.New("the waiter has not tried yet")
		}
		return nil
	})
	f := x.arm(x.name)
	x.fired(f)
	select {
	case err = <-res:
	case <-time.After(eoCall):
		x.t.Fatalf("the waiter did not return within %v after its try was faulted (%s)", eoCall, x.holds())
	}
	require.GreaterOrEqual(x.t, first.Seen(), 2, "the faulted command was not the waiter's second")
	if !x.ok(err, "the waiter's Acquire(1) (its charging try faulted)") {
		return
	}
	// The first acquirer's grant has left the window (the waiter waited for that): one grant, and
	// one permit of the rate of 2 left.
	permits, value := "{"+x.name+"}:permits", "{"+x.name+"}:value"
	n, v := x.int("ZCARD", permits), x.str("GET", value)
	assert.True(x.t, n == 1 && v == "1", "after a rate of 2, Acquire(2) and, once it left the window, one Acquire(1) (%s), %s holds %d grants and %s is %q; one application leaves 1 grant and 1 permit. Redis holds: %s",
		x.cut, permits, n, value, v, x.holds())
}

// publish is Redisson's publish command for the deployment: sharded on a cluster.
func (x *eo) publish() string {
	if x.env.tg.Name == "cluster" {
		return "SPUBLISH"
	}
	return "PUBLISH"
}

// fairQueued faults the first try of a waiter that queues behind a holder.
func fairQueued(x *eo) {
	l1, l2 := x.fair(x.c1, x.name), x.fair(x.c2, x.name)
	h1 := x.lock(l1)
	f := x.arm(x.name, from(x.c2))
	type result struct {
		held context.Context
		err  error
	}
	res := make(chan result, 1)
	go func() {
		held, err := l2.Lock(x.ctx)
		res <- result{held, err}
	}()
	x.fired(f)
	queue := "redisson_lock_queue:{" + x.name + "}"
	var r *result
	testkit.Eventually(x.t, 20*time.Second, func() error {
		select {
		case got := <-res:
			r = &got
			return nil
		default:
		}
		if n := x.queued(queue, x.c2); n != 1 {
			return fmt.Errorf("the waiter's owner is queued %d times: %s", n, x.holds())
		}
		return nil
	})
	if r != nil { // the waiter returned while the lock was still held
		if x.ok(r.err, "the queued waiter's Lock") {
			assert.Fail(x.t, "the waiter acquired while another held the lock")
			x.unlock(l2, r.held)
		}
		x.unlock(l1, h1)
		x.fairFree(x.name, "a Lock and its Unlock while a waiter's Lock failed")
		return
	}
	x.unlock(l1, h1)
	var got result
	select {
	case got = <-res:
	case <-time.After(eoCall):
		x.t.Fatalf("the queued waiter did not acquire within %v of the release (%s)", eoCall, x.holds())
	}
	if !x.ok(got.err, "the queued waiter's Lock") {
		x.fairFree(x.name, "a Lock and its Unlock while a waiter's Lock failed")
		return
	}
	x.unlock(l2, got.held)
	x.fairFree(x.name, "two Locks and two Unlocks")
}

// extender is a lock with a per-call lease and Extend.
type extender interface {
	locker
	LockFor(ctx context.Context, lease time.Duration) (context.Context, error)
	Extend(ctx context.Context, lease time.Duration) error
}

// extendCase extends a hold with a fixed lease of a minute to an hour under the fault: it succeeds
// once, the lock's key (a hash whose TTL is the longest lease) lives an hour, the call's memo goes,
// and one release frees the lock.
func extendCase(x *eo, l extender, key string) {
	// A fixed lease, so that no renewal is cut instead; no deadline of the case's own on the hold.
	held, err := l.LockFor(context.WithoutCancel(x.ctx), time.Minute)
	require.NoError(x.t, err)
	f := x.arm(key)
	err = l.Extend(held, time.Hour)
	x.fired(f)
	x.ok(err, "Extend(1h)")
	x.leaseLeft(key, time.Hour, "LockFor(1m) and one Extend(1h)")
	dl, _ := held.Deadline()
	assert.True(x.t, time.Until(dl) > time.Hour-2*time.Minute, "after Extend(1h) (%s), the hold's deadline is %v away", x.cut, time.Until(dl))
	x.noMemos("one Extend")
	x.unlock(l, held)
	x.free(key, "LockFor, Extend and one Unlock")
	if leases := x.scan("{" + key + "}:*:rwlock_timeout:*"); len(leases) > 0 {
		assert.Failf(x.t, "read lease left", "after LockFor, Extend and one Unlock (%s), Redis holds the read leases %q", x.cut, leases)
	}
}

// leaseLeft checks that key expires within lease, and not much before.
func (x *eo) leaseLeft(key string, lease time.Duration, after string) {
	x.t.Helper()
	left := time.Duration(x.int("PTTL", key)) * time.Millisecond
	assert.True(x.t, left > lease-time.Minute && left <= lease, "after %s (%s), %s expires in %v; one application leaves %v. Redis holds: %s",
		after, x.cut, key, left, lease, x.holds())
}

// readLease returns the key of the k-th read lease of held's owner.
func (x *eo) readLease(c *redisync.Client, held context.Context, k int) string {
	owner, ok := redisync.OwnerID(held)
	require.True(x.t, ok, "no owner in the held ctx")
	return fmt.Sprintf("{%s}:%s:%d:rwlock_timeout:%d", x.name, c.ID(), owner, k)
}

// noMemos checks that the memos of the object's calls are gone, soon (the client deletes one in the
// background once it has the answer).
func (x *eo) noMemos(after string) {
	x.t.Helper()
	memos := "redisync_once:{" + x.name + "}:*"
	deadline := time.Now().Add(10 * time.Second)
	for len(x.scan(memos)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := x.scan(memos); len(left) > 0 {
		assert.Failf(x.t, "memo left", "after %s (%s), Redis still holds the memos %q after 10 s. Redis holds: %s", after, x.cut, left, x.holds())
	}
}

func rwLockCase(x *eo, read bool) {
	rw, err := rwlock.New(x.c1, x.name)
	require.NoError(x.t, err)
	l, side := rw.WriteLock(), "write"
	if read {
		l, side = rw.ReadLock(), "read"
	}
	f := x.arm(x.name)
	held, err := l.Lock(x.ctx)
	x.fired(f)
	if !x.ok(err, side+" Lock") {
		x.rwFree("a failed " + side + " Lock")
		return
	}
	x.unlock(l, held)
	x.rwFree("one " + side + " Lock and one Unlock")
}

func rwUnlockCase(x *eo, read bool) {
	rw, err := rwlock.New(x.c1, x.name)
	require.NoError(x.t, err)
	l, side := rw.WriteLock(), "write"
	if read {
		l, side = rw.ReadLock(), "read"
	}
	held := x.lock(l)
	f := x.arm(x.name)
	err = l.Unlock(held)
	x.fired(f)
	x.ok(err, side+" Unlock")
	x.rwFree("one " + side + " Lock and one Unlock")
}

// from matches a script that a Client sends for one of its owners: its ARGV holds the owner's field.
func from(c *redisync.Client) func([]string) bool {
	prefix := c.ID() + ":"
	return func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) })
	}
}

// arm cuts, in the case's mode, the first script call with key among its KEYS (and that match
// accepts, when given).
func (x *eo) arm(key string, match ...func([]string) bool) *redistest.Fault {
	r := redistest.Rule{Cut: x.cut, Key: key}
	if len(match) > 0 {
		r.Match = match[0]
	}
	f := x.env.arm(r)
	x.t.Cleanup(func() { f.Disarm() })
	return f
}

// faultNext arms the fault of TestExactlyOnceBounded's call, after its set-up.
func (x *eo) faultNext() { x.next = x.arm(x.name) }

// fired requires that f cut its connection: a case whose fault never fired tested nothing.
func (x *eo) fired(f *redistest.Fault) {
	x.t.Helper()
	if !f.Wait(eoCall) {
		x.t.Fatalf("the fault did not fire: no matching command within %v (%d seen)", eoCall, f.Seen())
	}
	cmd := f.Command()
	if len(cmd) > 3 && strings.HasPrefix(cmd[0], "EVAL") {
		cmd = append([]string{cmd[0], "<script>"}, cmd[2:]...)
	}
	x.t.Logf("%s: cut %q", x.cut, cmd)
}

// ok checks that a faulted call succeeded, as the same call does without a fault.
func (x *eo) ok(err error, call string) bool {
	x.t.Helper()
	return assert.NoError(x.t, err, "%s (%s) failed; the same call without a fault succeeds. Redis holds: %s", call, x.cut, x.holds())
}

func (x *eo) rlock(c *redisync.Client, name string) *rlock.Lock {
	l, err := rlock.New(c, name)
	require.NoError(x.t, err)
	return l
}

func (x *eo) spin(c *redisync.Client, name string, opts ...spinlock.Option) *spinlock.Lock {
	l, err := spinlock.New(c, name, opts...)
	require.NoError(x.t, err)
	return l
}

// group returns the group lock of values in the group named by the case.
func (x *eo) group(c *redisync.Client, values ...string) *multilock.Group {
	g, err := multilock.NewGroup(c, x.name, values)
	require.NoError(x.t, err)
	return g
}

// groupCounts checks that held's owner holds every value of g count times, as its hold count field
// says.
func (x *eo) groupCounts(g *multilock.Group, c *redisync.Client, held context.Context, count int, after string) {
	x.t.Helper()
	id, ok := redisync.OwnerID(held)
	require.True(x.t, ok, "no owner in the held ctx")
	owner := c.ID() + ":" + strconv.FormatInt(id, 10)
	for _, f := range g.Fields() {
		got := x.str("HGET", x.name, f+":"+owner+":lock_count")
		assert.Equal(x.t, strconv.Itoa(count), got, "after %s (%s), the count of %s in %s is %q; one application of each leaves %d. Redis holds: %s",
			after, x.cut, f, x.name, got, count, x.holds())
	}
}

// groupFree checks that the group's hash is gone, and soon every memo of its calls (the client
// deletes an acquisition's memo in the background once it has the answer).
func (x *eo) groupFree(after string) {
	x.t.Helper()
	x.free(x.name, after)
	memos := "redisync_once:{" + x.name + "}:*"
	deadline := time.Now().Add(10 * time.Second)
	for len(x.scan(memos)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := x.scan(memos); len(left) > 0 {
		assert.Failf(x.t, "memo left", "after %s (%s), Redis still holds the memos %q after 10 s. Redis holds: %s", after, x.cut, left, x.holds())
	}
}

func (x *eo) fair(c *redisync.Client, name string) *fairlock.Lock {
	l, err := fairlock.New(c, name)
	require.NoError(x.t, err)
	return l
}

func (x *eo) sem(c *redisync.Client, name string) *semaphore.Semaphore {
	s, err := semaphore.New(c, name)
	require.NoError(x.t, err)
	return s
}

func (x *eo) expirable(c *redisync.Client, name string) *semaphore.Expirable {
	e, err := semaphore.NewExpirable(c, name)
	require.NoError(x.t, err)
	return e
}

func (x *eo) latch(c *redisync.Client, name string) *countdown.Latch {
	l, err := countdown.New(c, name)
	require.NoError(x.t, err)
	return l
}

func (x *eo) setPermits(s *semaphore.Semaphore, n int64) {
	set, err := s.TrySetPermits(x.ctx, n)
	require.NoError(x.t, err)
	require.True(x.t, set)
}

func (x *eo) setExpirable(e *semaphore.Expirable, n int64) {
	set, err := e.TrySetPermits(x.ctx, n)
	require.NoError(x.t, err)
	require.True(x.t, set)
}

type locker interface {
	Lock(ctx context.Context) (context.Context, error)
	Unlock(ctx context.Context) error
}

// lock and lockWith take a hold without a fault.
func (x *eo) lock(l locker) context.Context { return x.lockWith(l, x.ctx) }

func (x *eo) lockWith(l locker, ctx context.Context) context.Context {
	x.t.Helper()
	held, err := l.Lock(ctx)
	require.NoError(x.t, err)
	return held
}

// unlock is the one normal release after a faulted call.
func (x *eo) unlock(l locker, held context.Context) {
	x.t.Helper()
	assert.NoError(x.t, l.Unlock(held), "the release after the faulted call; Redis holds: %s", x.holds())
}

// free checks that the lock is gone from Redis: no owner holds it, and no hold count lingers.
func (x *eo) free(name, after string) {
	x.t.Helper()
	if n := x.int("EXISTS", name); n != 0 {
		assert.Failf(x.t, "lock left held", "after %s (%s), Redis holds the lock %s; one application leaves it free (no key). Redis holds: %s",
			after, x.cut, name, x.holds())
	}
}

// fairFree checks that the fair lock, its queue and its timeouts are all gone.
func (x *eo) fairFree(name, after string) {
	x.t.Helper()
	x.free(name, after)
	for _, k := range []string{"redisson_lock_queue:{" + name + "}", "redisson_lock_timeout:{" + name + "}"} {
		if n := x.int("EXISTS", k); n != 0 {
			assert.Failf(x.t, "fair lock's waiters left", "after %s (%s), Redis holds %s; one application leaves it empty (no key). Redis holds: %s",
				after, x.cut, k, x.holds())
		}
	}
}

// rwFree checks that the read-write lock's hash and every read lease are gone.
func (x *eo) rwFree(after string) {
	x.t.Helper()
	x.free(x.name, after)
	if leases := x.scan("{" + x.name + "}:*:rwlock_timeout:*"); len(leases) > 0 {
		assert.Failf(x.t, "read lease left", "after %s (%s), Redis holds the read leases %q; one application leaves none. Redis holds: %s",
			after, x.cut, leases, x.holds())
	}
}

// holdCount checks the hold count of held's owner in the lock's hash.
func (x *eo) holdCount(name string, c *redisync.Client, held context.Context, want int, after string) {
	x.t.Helper()
	owner, ok := redisync.OwnerID(held)
	require.True(x.t, ok, "no owner in the held ctx")
	field := c.ID() + ":" + strconv.FormatInt(owner, 10)
	got := x.str("HGET", name, field)
	assert.Equal(x.t, strconv.Itoa(want), got, "after %s (%s), the hold count of %s in %s is %q; one application of each leaves %d. Redis holds: %s",
		after, x.cut, field, name, got, want, x.holds())
}

// count checks a string count (a semaphore's permits, a latch's count); a missing key counts 0.
func (x *eo) count(key string, want int64, after string) {
	x.t.Helper()
	got := x.str("GET", key)
	n, _ := strconv.ParseInt(got, 10, 64)
	assert.Equal(x.t, want, n, "after %s (%s), %s holds %q; one application of each leaves %d. Redis holds: %s",
		after, x.cut, key, got, want, x.holds())
}

// expirableState checks an expirable semaphore's available count and the permits out.
func (x *eo) expirableState(available, out int64, after string) {
	x.t.Helper()
	x.count(x.name, available, after)
	timeouts := "{" + x.name + "}:timeout"
	n := x.int("ZCARD", timeouts)
	assert.Equal(x.t, out, n, "after %s (%s), %s holds %d permits; one application of each leaves %d. Redis holds: %s",
		after, x.cut, timeouts, n, out, x.holds())
}

// limiter returns a rate limiter on c1 with rate per hour.
func (x *eo) limiter(rate int64) *ratelimit.Limiter {
	l, err := ratelimit.New(x.c1, x.name)
	require.NoError(x.t, err)
	set, err := l.TrySetRate(x.ctx, ratelimit.Config{Rate: rate, Interval: time.Hour})
	require.NoError(x.t, err)
	require.True(x.t, set)
	return l
}

// limiterState checks a rate limiter's rate, the permits left and the grants in its window.
func (x *eo) limiterState(rate, value string, grants int64, after string) {
	x.t.Helper()
	permits, valueKey := "{"+x.name+"}:permits", "{"+x.name+"}:value"
	r, v, n := x.str("HGET", x.name, "rate"), x.str("GET", valueKey), x.int("ZCARD", permits)
	assert.True(x.t, r == rate && v == value && n == grants, "after %s (%s), the rate is %q, %s is %q and %s holds %d grants; one application leaves %s, %q and %d. Redis holds: %s",
		after, x.cut, r, valueKey, v, permits, n, rate, value, grants, x.holds())
}

// window checks a rate limiter of rate 5: grants in its window, and the permits left.
func (x *eo) window(grants int64, after string) {
	x.t.Helper()
	permits, value := "{"+x.name+"}:permits", "{"+x.name+"}:value"
	n := x.int("ZCARD", permits)
	assert.Equal(x.t, grants, n, "after %s (%s), %s holds %d grants; one application leaves %d. Redis holds: %s",
		after, x.cut, permits, n, grants, x.holds())
	if v := x.str("GET", value); grants > 0 || v != "" {
		assert.Equal(x.t, strconv.FormatInt(5-grants, 10), v, "after %s (%s), %s is %q; one application leaves %d. Redis holds: %s",
			after, x.cut, value, v, 5-grants, x.holds())
	}
}

// queued counts the entries of c's owners in a fair lock's queue.
func (x *eo) queued(queue string, c *redisync.Client) int {
	n := 0
	for _, e := range x.strings("LRANGE", queue, "0", "-1") {
		if strings.HasPrefix(e, c.ID()+":") {
			n++
		}
	}
	return n
}

func (x *eo) do(args ...string) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := x.env.rdb
	return rdb.Do(ctx, rdb.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build())
}

func (x *eo) exec(args ...string) {
	x.t.Helper()
	require.NoError(x.t, x.do(args...).Error(), "%v", args)
}

func (x *eo) str(args ...string) string {
	x.t.Helper()
	s, err := x.do(args...).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		x.t.Fatalf("%v: %v", args, err)
	}
	return s
}

func (x *eo) int(args ...string) int64 {
	x.t.Helper()
	n, err := x.do(args...).AsInt64()
	require.NoError(x.t, err, "%v", args)
	return n
}

func (x *eo) strings(args ...string) []string {
	x.t.Helper()
	s, err := x.do(args...).AsStrSlice()
	require.NoError(x.t, err, "%v", args)
	return s
}

// scan lists the keys matching pattern on every node.
func (x *eo) scan(pattern string) []string {
	x.t.Helper()
	var keys []string
	for _, node := range x.env.rdb.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(context.Background(), node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			require.NoError(x.t, err)
			keys = append(keys, e.Elements...)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// holds renders every key that carries the case's name, with its type, contents and TTL, for
// failure messages: what Redis holds against what one application leaves.
func (x *eo) holds() string {
	keys := x.scan("*" + x.name + "*")
	if len(keys) == 0 {
		return "nothing under " + x.name
	}
	var b strings.Builder
	for _, k := range keys {
		typ, _ := x.do("TYPE", k).ToString()
		pttl, _ := x.do("PTTL", k).AsInt64()
		read := map[string][]string{
			"string": {"GET", k}, "hash": {"HGETALL", k}, "list": {"LRANGE", k, "0", "-1"},
			"zset": {"ZRANGE", k, "0", "-1", "WITHSCORES"}, "set": {"SMEMBERS", k},
		}[typ]
		v := "?"
		if read != nil {
			m, _ := x.do(read...).ToMessage()
			v = render(m)
		}
		fmt.Fprintf(&b, "\n  %s (%s, pttl %d) = %s", k, typ, pttl, v)
	}
	return b.String()
}

// render shows a reply with its nesting: strings quoted, arrays in [], maps in {}.
func render(m rueidis.RedisMessage) string {
	if m.IsNil() {
		return "nil"
	}
	if kv, err := m.ToMap(); m.IsMap() && err == nil {
		keys := slices.Sorted(maps.Keys(kv))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ": " + render(kv[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if arr, err := m.ToArray(); err == nil {
		parts := make([]string, len(arr))
		for i, e := range arr {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	if n, err := m.AsInt64(); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if f, err := m.AsFloat64(); err == nil {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s, _ := m.ToString()
	return strconv.Quote(s)
}

// eoBound is how long a faulted call may take on a ctx without a deadline: the connection is dialled
// again in milliseconds, so this leaves the library its own retry bound (send.RetryBound, 5 s) twice
// over, and still fails a call that hangs.
const eoBound = 10 * time.Second

// TestExactlyOnceBounded checks, for each fault mode, that calls whose script loses its reply or its
// request return within eoBound on a ctx without a deadline, whatever they answer: a lost reply must
// never leave a caller waiting for an answer that will not come.
func TestExactlyOnceBounded(t *testing.T) {
	env := eoStandalone(t)
	calls := []struct {
		name string
		call func(x *eo) error
	}{
		{"rlock/Lock", func(x *eo) error {
			l := x.rlock(x.c1, x.name)
			x.faultNext()
			held, err := l.Lock(context.Background())
			if err == nil {
				err = l.Unlock(held)
			}
			return err
		}},
		{"rlock/Unlock", func(x *eo) error {
			l := x.rlock(x.c1, x.name)
			held := x.lock(l)
			x.faultNext()
			return l.Unlock(held)
		}},
		{"spinlock/Lock", func(x *eo) error {
			l := x.spin(x.c1, x.name)
			x.faultNext()
			held, err := l.Lock(context.Background())
			if err == nil {
				err = l.Unlock(held)
			}
			return err
		}},
		{"spinlock/Unlock", func(x *eo) error {
			l := x.spin(x.c1, x.name)
			held := x.lock(l)
			x.faultNext()
			return l.Unlock(held)
		}},
		{"multilock/Group-Lock", func(x *eo) error {
			g := x.group(x.c1, "a", "b")
			x.faultNext()
			held, err := g.Lock(context.Background())
			if err == nil {
				err = g.Unlock(held)
			}
			return err
		}},
		{"multilock/Group-Unlock", func(x *eo) error {
			g := x.group(x.c1, "a", "b")
			held := x.lock(g)
			x.faultNext()
			return g.Unlock(held)
		}},
		{"semaphore/Acquire", func(x *eo) error {
			s := x.sem(x.c1, x.name)
			x.setPermits(s, 1)
			x.faultNext()
			return s.Acquire(context.Background(), 1)
		}},
		{"semaphore/Release", func(x *eo) error {
			s := x.sem(x.c1, x.name)
			x.faultNext()
			return s.Release(context.Background(), 1)
		}},
		{"countdown/CountDown", func(x *eo) error {
			l := x.latch(x.c1, x.name)
			_, err := l.TrySetCount(x.ctx, 1)
			require.NoError(x.t, err)
			x.faultNext()
			return l.CountDown(context.Background())
		}},
		{"ratelimit/Acquire", func(x *eo) error {
			l, err := ratelimit.New(x.c1, x.name)
			require.NoError(x.t, err)
			_, err = l.TrySetRate(x.ctx, ratelimit.Config{Rate: 5, Interval: time.Hour})
			require.NoError(x.t, err)
			x.faultNext()
			return l.Acquire(context.Background(), 1)
		}},
		{"ratelimit/Release", func(x *eo) error {
			l := x.limiter(5)
			require.NoError(x.t, l.Acquire(x.ctx, 1))
			x.faultNext()
			return l.Release(context.Background(), 1)
		}},
	}
	for _, cut := range eoCuts {
		t.Run(strings.ReplaceAll(cut.String(), " ", "-"), func(t *testing.T) {
			for _, tc := range calls {
				t.Run(tc.name, func(t *testing.T) {
					x := &eo{t: t, env: env, cut: cut, ctx: context.Background(),
						name: "bound-" + strings.ReplaceAll(tc.name, "/", "-") + "-" + strings.Fields(cut.String())[0],
						c1:   env.tg.Client(t)}
					start := time.Now()
					done := make(chan error, 1)
					go func() { done <- tc.call(x) }()
					select {
					case err := <-done:
						t.Logf("returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
					case <-time.After(eoBound):
						t.Fatalf("%s (%s) has not returned after %v (Redis holds: %s)", tc.name, cut, eoBound, x.holds())
					}
					x.fired(x.next)
				})
			}
		})
	}
}
