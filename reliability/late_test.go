package reliability

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestFairTryArrivingAfterItsWaiterLeft holds up a fair lock waiter's first try in the network
// until the waiter has given up and left the line, and then lets it reach Redis, as a request
// written on a connection that a stalled server's client abandoned runs once the server resumes.
// The try must not take a place in line for an acquisition that is over: nobody would come back
// for it, and the place would keep the lock from everyone for a whole slot (5 minutes by default).
func TestFairTryArrivingAfterItsWaiterLeft(t *testing.T) {
	for name, env := range map[string]func(*testing.T) *eoEnv{"standalone": eoStandalone, "cluster": eoCluster} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*eoCall)
			defer cancel()
			name := "late-fair-" + e.tg.Name
			h1, c2, l1, l2, l3 := behindAHolder(t, ctx, e, func(c *redisync.Client) (*fairlock.Lock, error) {
				return fairlock.New(c, name)
			})

			f := e.arm(redistest.Rule{Cut: redistest.Delay, Key: name, Match: from(c2)})
			_, err := l2.TryLock(ctx, 2*time.Second)
			require.ErrorIs(t, err, redisync.ErrNotAcquired, "a waiter behind a holder")
			require.True(t, f.Wait(eoCall), "the waiter's first try was not held up")
			testkit.Eventually(t, 10*time.Second, func() error {
				return waitingIs(ctx, l1, 0)
			})

			reply, err := f.Deliver()
			require.NoError(t, err)
			t.Logf("the held-up try, run after its waiter left, answered %q", reply)
			require.NoError(t, waitingIs(ctx, l1, 0), "a try that arrived after its waiter left took a place in line")

			require.NoError(t, l1.Unlock(h1))
			h3, err := l3.TryLock(ctx, 0)
			require.NoError(t, err, "the lock is free and nobody waits for it")
			require.NoError(t, l3.Unlock(h3))
		})
	}
}

// TestLockTryArrivingAfterItsWaiterLeft holds up an rlock waiter's try that records it in the
// network until the waiter has given up and left, and then lets it reach Redis: a request on a
// connection that a stalled server's client abandoned, or on another of the Client's pooled
// connections than its leave, may run after the leave once the server resumes. It records the waiter
// again. Unlike a fair lock's place in line, that record costs nobody the lock: it lapses with the
// waiter's window, and a release that hands the lock to it has it given back by the waiter's Client,
// or passes it over once that Client no longer listens.
func TestLockTryArrivingAfterItsWaiterLeft(t *testing.T) {
	recording := lua.Load("rlock_acquire.lua")
	for name, env := range map[string]func(*testing.T) *eoEnv{"standalone": eoStandalone, "cluster": eoCluster} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*eoCall)
			defer cancel()
			name := "late-try-" + e.tg.Name
			h1, c2, l1, l2, l3 := behindAHolder(t, ctx, e, func(c *redisync.Client) (*rlock.Lock, error) {
				return rlock.New(c, name)
			})

			isC2 := from(c2)
			f := e.arm(redistest.Rule{Cut: redistest.Delay, Key: name, Match: func(args []string) bool {
				return len(args) > 1 && strings.EqualFold(args[0], "EVALSHA") && args[1] == recording.SHA1() && isC2(args)
			}})
			_, err := l2.TryLock(ctx, 2*time.Second)
			require.ErrorIs(t, err, redisync.ErrNotAcquired, "a waiter behind a holder")
			require.True(t, f.Wait(eoCall), "the waiter's recording try was not held up")
			waiters := "redisync_lock_waiters:{" + name + "}"
			testkit.Eventually(t, 10*time.Second, func() error {
				if n := testkit.DoString(t, e.rdb, "ZCARD", waiters); n != "0" {
					return fmt.Errorf("%s waiter records, want the leaving waiter's gone", n)
				}
				return nil
			})

			reply, err := f.Deliver()
			require.NoError(t, err)
			t.Logf("the held-up try, run after its waiter left, answered %q", reply)
			require.Equal(t, "1", testkit.DoString(t, e.rdb, "ZCARD", waiters), "the late try's record of the waiter that left")
			require.NotEqual(t, "-1", testkit.DoString(t, e.rdb, "PTTL", waiters), "a record of a waiter that left, with no expiry")

			require.NoError(t, l1.Unlock(h1))
			h3, err := l3.TryLock(ctx, 5*time.Second)
			require.NoError(t, err, "the lock is free, but for a record of a waiter that left")
			require.NoError(t, l3.Unlock(h3))
		})
	}
}

// behindAHolder opens one lock on each of three Clients of e, and locks the first: the hold's ctx
// (unlocked when the test ends, if it has not been), the second lock's Client, and the three locks.
func behindAHolder[L interface {
	Lock(context.Context) (context.Context, error)
	Unlock(context.Context) error
}](t *testing.T, ctx context.Context, e *eoEnv, open func(*redisync.Client) (L, error)) (context.Context, *redisync.Client, L, L, L) {
	t.Helper()
	cs := []*redisync.Client{e.tg.Client(t), e.tg.Client(t), e.tg.Client(t)}
	var ls [3]L
	for i, c := range cs {
		var err error
		ls[i], err = open(c)
		require.NoError(t, err)
	}
	h1, err := ls[0].Lock(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ls[0].Unlock(h1) }) // on failure; a second Unlock changes nothing
	return h1, cs[1], ls[0], ls[1], ls[2]
}

func waitingIs(ctx context.Context, l *fairlock.Lock, want int) error {
	n, err := l.Waiting(ctx)
	if err == nil && n != want {
		err = fmt.Errorf("the queue holds %d owners, want %d", n, want)
	}
	return err
}

// TestCallOvertakenByItsResend holds up the first send of a call in the network while the library,
// seeing its connection fail, sends it again on another one; Redis runs that second send, and the
// first one reaches Redis right after, before the caller has the answer: a request written on a
// connection its client gave up runs as soon as a stalled server resumes, beside the one sent again.
// Both sends are one call: the late one must change nothing.
func TestCallOvertakenByItsResend(t *testing.T) {
	for name, env := range map[string]func(*testing.T) *eoEnv{"standalone": eoStandalone, "cluster": eoCluster} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*eoCall)
			defer cancel()
			c := e.tg.Client(t)
			// lateThen runs call with its first send held up and run after the second, and between
			// after the second send ran and before the first runs.
			lateThen := func(key string, call func() error, between func()) {
				t.Helper()
				first := e.arm(redistest.Rule{Cut: redistest.Delay, Key: key, Match: notHoldsCheck})
				again := e.arm(redistest.Rule{Cut: redistest.HoldReply, Key: key, Match: notHoldsCheck})
				t.Cleanup(again.Release)
				done := make(chan error, 1)
				go func() { done <- call() }()
				require.True(t, again.Wait(eoCall), "the call was not sent again")
				// The proxy closes the connection before it marks the fault fired: the resend can get there first.
				require.True(t, first.Wait(eoCall), "the call's first send was not held up")
				between()
				reply, err := first.Deliver()
				require.NoError(t, err)
				t.Logf("the first send to %s, run after the second, answered %q", key, reply)
				again.Release()
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(eoCall):
					t.Fatalf("the call did not return")
				}
			}
			late := func(key string, call func() error) { lateThen(key, call, func() {}) }
			// reentrant: one Lock late, a re-entry, its Unlock late, the outer Unlock; Redis must
			// count what the client does, and the lock ends free.
			reentrant := func(t *testing.T, key string, l lateLock) {
				warm, err := l.Lock(ctx) // the scripts loaded: the late send is one Redis runs
				require.NoError(t, err)
				require.NoError(t, l.Unlock(warm))
				var held context.Context
				late(key, func() (err error) { held, err = l.Lock(ctx); return err })
				n, err := l.HoldCount(held)
				require.NoError(t, err)
				require.Equal(t, 1, n, "hold count in Redis after one Lock")
				inner, err := l.Lock(held)
				require.NoError(t, err)
				late(key, func() error { return l.Unlock(inner) })
				n, err = l.HoldCount(held)
				require.NoError(t, err)
				require.Equal(t, 1, n, "hold count in Redis after two Locks and one Unlock")
				require.NoError(t, l.Unlock(held))
				locked, err := l.IsLocked(ctx)
				require.NoError(t, err)
				require.False(t, locked, "the lock is held after every Lock was unlocked")
			}
			t.Run("lock", func(t *testing.T) {
				l, err := rlock.New(c, "late-lock-"+name)
				require.NoError(t, err)
				reentrant(t, l.Name(), l)
			})
			t.Run("fair lock", func(t *testing.T) {
				l, err := fairlock.New(c, "late-fair-"+name)
				require.NoError(t, err)
				reentrant(t, l.Name(), l)
			})
			t.Run("read-write lock", func(t *testing.T) {
				rw, err := rwlock.New(c, "late-rw-"+name)
				require.NoError(t, err)
				reentrant(t, rw.Name(), rw.WriteLock())
				reentrant(t, rw.Name(), rw.ReadLock())
			})
			t.Run("semaphore", func(t *testing.T) {
				s, err := semaphore.New(c, "late-sem-"+name)
				require.NoError(t, err)
				_, err = s.TrySetPermits(ctx, 2)
				require.NoError(t, err)
				require.NoError(t, s.Acquire(ctx, 1))
				require.NoError(t, s.Release(ctx, 1))
				late(s.Name(), func() error { return s.Acquire(ctx, 1) })
				n, err := s.Available(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "permits left after one Acquire of 1 of 2")
				late(s.Name(), func() error { return s.Release(ctx, 1) })
				n, err = s.Available(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 2, n, "permits after one Acquire and one Release")
			})
			t.Run("expirable semaphore", func(t *testing.T) {
				s, err := semaphore.NewExpirable(c, "late-exp-"+name)
				require.NoError(t, err)
				_, err = s.TrySetPermits(ctx, 2)
				require.NoError(t, err)
				ids, err := s.Acquire(ctx, 1)
				require.NoError(t, err)
				require.NoError(t, s.Release(ctx, ids...))
				late(s.Name(), func() (err error) { ids, err = s.Acquire(ctx, 1); return err })
				n, err := s.Available(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "permits left after one Acquire of 1 of 2")
				require.NoError(t, s.Release(ctx, ids...))
				n, err = s.Available(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 2, n, "permits after one Acquire and its Release")
			})
			t.Run("rate limiter", func(t *testing.T) {
				l, err := ratelimit.New(c, "late-rate-"+name)
				require.NoError(t, err)
				_, err = l.TrySetRate(ctx, ratelimit.Config{Rate: 5, Interval: time.Hour})
				require.NoError(t, err)
				require.NoError(t, l.Acquire(ctx, 1))
				late(l.Name(), func() error { return l.Acquire(ctx, 1) })
				n, err := l.Available(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 3, n, "permits left in the window after two Acquires of 1 of 5")
			})
			t.Run("group lock", func(t *testing.T) {
				g, err := multilock.NewGroup(c, "late-group-"+name, []string{"a", "b"})
				require.NoError(t, err)
				warm, err := g.Lock(ctx)
				require.NoError(t, err)
				require.NoError(t, g.Unlock(warm))
				var held context.Context
				late(g.Name(), func() (err error) { held, err = g.Lock(ctx); return err })
				id, ok := redisync.OwnerID(held)
				require.True(t, ok)
				owner := c.ID() + ":" + strconv.FormatInt(id, 10)
				for _, f := range g.Fields() {
					n, err := e.rdb.Do(ctx, e.rdb.B().Hget().Key(g.Name()).Field(f+":"+owner+":lock_count").Build()).ToString()
					require.NoError(t, err)
					require.Equal(t, "1", n, "the count of %s after one Lock", f)
				}
				inner, err := g.Lock(held)
				require.NoError(t, err)
				late(g.Name(), func() error { return g.Unlock(inner) })
				require.NoError(t, g.Unlock(held))
				locked, err := g.IsLocked(ctx)
				require.NoError(t, err)
				require.False(t, locked, "the group is locked after every Lock was unlocked")
			})
			// extend: an Extend whose first send arrives after the send made again extends once: the
			// lease, cut back in between, stays as it was cut.
			t.Run("extend", func(t *testing.T) {
				pttl := func(key string) int64 {
					n, err := e.rdb.Do(ctx, e.rdb.B().Pttl().Key(key).Build()).AsInt64()
					require.NoError(t, err)
					return n
				}
				cut := func(key string) func() {
					return func() {
						require.Greater(t, pttl(key), int64(50*time.Minute/time.Millisecond), "the send made again did not extend %s", key)
						require.NoError(t, e.rdb.Do(ctx, e.rdb.B().Pexpire().Key(key).Milliseconds(30_000).Build()).Error())
					}
				}
				for _, tc := range []struct {
					what string
					l    interface {
						LockFor(context.Context, time.Duration) (context.Context, error)
						Extend(context.Context, time.Duration) error
						Unlock(context.Context) error
					}
					name  string
					lease func(held context.Context) string // the key the lease is kept on
				}{
					{what: "lock", name: "late-extend-lock-" + name},
					{what: "read lock", name: "late-extend-read-" + name},
				} {
					switch tc.what {
					case "lock":
						l, err := rlock.New(c, tc.name)
						require.NoError(t, err)
						tc.l, tc.lease = l, func(context.Context) string { return l.Name() }
					case "read lock":
						rw, err := rwlock.New(c, tc.name)
						require.NoError(t, err)
						tc.l = rw.ReadLock()
						tc.lease = func(held context.Context) string {
							id, _ := redisync.OwnerID(held)
							return "{" + rw.Name() + "}:" + c.ID() + ":" + strconv.FormatInt(id, 10) + ":rwlock_timeout:1"
						}
					}
					held, err := tc.l.LockFor(ctx, time.Minute)
					require.NoError(t, err, tc.what)
					require.NoError(t, tc.l.Extend(held, time.Minute), tc.what) // the script loaded
					key := tc.lease(held)
					lateThen(tc.name, func() error { return tc.l.Extend(held, time.Hour) }, cut(key))
					require.LessOrEqual(t, pttl(key), int64(30_000), "%s: the first send, run after the one made again, extended %s again", tc.what, key)
					require.NoError(t, tc.l.Unlock(held), tc.what)
				}
			})
			t.Run("latch", func(t *testing.T) {
				l, err := countdown.New(c, "late-latch-"+name)
				require.NoError(t, err)
				_, err = l.TrySetCount(ctx, 4)
				require.NoError(t, err)
				require.NoError(t, l.CountDown(ctx))
				late(l.Name(), func() error { return l.CountDown(ctx) })
				n, err := l.Count(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 2, n, "count after one CountDown from 3")
			})
		})
	}
}

// holdsChecks are the SHAs of the scripts that renew and check holds (each as sent first, and again).
var holdsChecks = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range []*lua.Script{
		lua.Load("rlock_renew.lua"), lua.Load("rwlock_read_renew.lua"),
		lua.Load("rwlock_write_renew.lua"), lua.Load("grouplock_renew.lua"),
	} {
		m[s.SHA1()], m[s.Resent().SHA1()] = true, true
	}
	return m
}()

// notHoldsCheck matches a script call that is not a renewal or a check of holds: a connection that
// ends has the Client check its holds at once, on the keys a case arms its cuts on, beside the
// call the case follows.
func notHoldsCheck(args []string) bool {
	if len(args) < 2 {
		return true
	}
	sha := args[1]
	if strings.ToUpper(args[0]) == "EVAL" {
		sum := sha1.Sum([]byte(args[1]))
		sha = hex.EncodeToString(sum[:])
	}
	return !holdsChecks[sha]
}

// lateLock is what TestCallOvertakenByItsResend's re-entrant cases use of a lock.
type lateLock interface {
	Lock(ctx context.Context) (context.Context, error)
	Unlock(ctx context.Context) error
	HoldCount(ctx context.Context) (int, error)
	IsLocked(ctx context.Context) (bool, error)
}
