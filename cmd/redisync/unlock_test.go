package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestUnlockForce: an operator breaks a lock of each kind whoever holds it; the holder's ctx ends
// as lost, and a waiter gets the lock. The tool says whether the lock was held.
func TestUnlockForce(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		addrs := strings.Join(tg.Addrs, ",")
		ctx := context.Background()
		// The holder learns of the loss at its next renewal, every third of its watchdog timeout.
		a, b := tg.Client(t, redisync.WithWatchdogTimeout(3*time.Second)), tg.Client(t)
		type lockOf func(c *redisync.Client) (lock func(context.Context) (context.Context, error), unlock func(context.Context) error)
		for _, tc := range []struct {
			name, kind string
			of         lockOf
		}{
			{"uf-lock", "lock", func(c *redisync.Client) (func(context.Context) (context.Context, error), func(context.Context) error) {
				l := must(rlock.New(c, "uf-lock"))
				return l.Lock, l.Unlock
			}},
			{"uf-fair", "fair lock", func(c *redisync.Client) (func(context.Context) (context.Context, error), func(context.Context) error) {
				l := must(fairlock.New(c, "uf-fair"))
				return l.Lock, l.Unlock
			}},
			{"uf-rw", "read-write lock", func(c *redisync.Client) (func(context.Context) (context.Context, error), func(context.Context) error) {
				l := must(rwlock.New(c, "uf-rw")).WriteLock()
				return l.Lock, l.Unlock
			}},
			{"uf-read", "read-write lock", func(c *redisync.Client) (func(context.Context) (context.Context, error), func(context.Context) error) {
				l := must(rwlock.New(c, "uf-read"))
				if c == b { // a writer waits for the reader
					return l.WriteLock().Lock, l.WriteLock().Unlock
				}
				return l.ReadLock().Lock, l.ReadLock().Unlock
			}},
			{"uf-group", "group lock", func(c *redisync.Client) (func(context.Context) (context.Context, error), func(context.Context) error) {
				l := must(multilock.NewGroup(c, "uf-group", []string{"x", "y"}))
				return l.Lock, l.Unlock
			}},
		} {
			t.Run(tc.kind, func(t *testing.T) {
				lock, _ := tc.of(a)
				held := must(lock(ctx))
				waitLock, waitUnlock := tc.of(b)
				got := testkit.Background(func() (context.Context, error) { return waitLock(ctx) })

				p := tool(t, addrs, "unlock", "--force", "--json", tc.name)
				var out struct {
					Name    string        `json:"name"`
					Kind    string        `json:"kind"`
					WasHeld bool          `json:"was_held"`
					Holders []holderState `json:"holders"`
				}
				if code := p.run(); code != 0 || json.Unmarshal(p.stdout.Bytes(), &out) != nil {
					t.Fatalf("%v", p)
				}
				if out.Name != tc.name || out.Kind != tc.kind || !out.WasHeld || len(out.Holders) != 1 || out.Holders[0].Owner != owner(a, held) {
					t.Errorf("%+v, want the %s held by %s", out, tc.kind, owner(a, held))
				}
				select {
				case <-held.Done():
					if !strings.Contains(context.Cause(held).Error(), "lost") {
						t.Errorf("the holder's ctx ended with %v, want lost", context.Cause(held))
					}
				case <-time.After(30 * time.Second):
					t.Error("the holder's ctx did not end")
				}
				h := testkit.Await(t, got, "the waiter")
				check(t, waitUnlock(h))

				p = tool(t, addrs, "unlock", "--force", tc.name)
				if code := p.run(); code != 0 || p.stdout.String() != tc.name+": not held; nothing changed\n" {
					t.Errorf("a free lock: %v", p)
				}
			})
		}
	})
}

// TestUnlockForceRefuses: unlock refuses, status 65, to touch what is no lock, and changes nothing;
// without --force it does nothing at all.
func TestUnlockForceRefuses(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	addr := tg.Addrs[0]
	rdb := tg.Redis(t)
	ctx := context.Background()
	c := tg.Client(t)
	must(must(semaphore.New(c, "ur-sem")).TrySetPermits(ctx, 2))
	must(must(countdown.New(c, "ur-latch")).TrySetCount(ctx, 2))
	testkit.Do(t, rdb, "HSET", "ur-hash", "name", "bob")
	testkit.Do(t, rdb, "SET", "ur-string", "hello")
	testkit.Do(t, rdb, "RPUSH", "ur-list", "a")
	exp := must(semaphore.NewExpirable(c, "ur-exp"))
	must(exp.TrySetPermits(ctx, 1))
	ids := must(exp.Acquire(ctx, 1))
	t.Cleanup(func() { exp.Release(context.Background(), ids...) })
	for _, tc := range []struct{ name, msg string }{
		{"ur-sem", `"ur-sem" is a semaphore or countdown latch, not a lock; nothing changed`},
		{"ur-exp", `"ur-exp" is a permit-expirable semaphore, not a lock; nothing changed`},
		{"ur-hash", `"ur-hash" holds a hash that is not a lock; nothing changed`},
		{"ur-string", `"ur-string" holds a string that is not a lock; nothing changed`},
		{"ur-list", `"ur-list" holds a list that is not a lock; nothing changed`},
	} {
		p := tool(t, addr, "unlock", "--force", "--yes", tc.name)
		if code := p.run(); code != exitDataErr || !strings.Contains(p.stderr.String(), tc.msg) || strings.Contains(p.stderr.String(), "bob") {
			t.Errorf("want exit 65 and %q\n%v", tc.msg, p)
		}
	}
	if got := testkit.DoString(t, rdb, "GET", "ur-sem"); got != "2" {
		t.Errorf("the semaphore changed: %s", got)
	}
	if got := testkit.DoString(t, rdb, "HGET", "ur-hash", "name"); got != "bob" {
		t.Errorf("the hash changed: %s", got)
	}
	if got := testkit.DoString(t, rdb, "ZCARD", "{ur-exp}:timeout"); got != "1" {
		t.Errorf("the permit went: %s", got)
	}

	held := must(must(rlock.New(c, "ur-lock")).Lock(ctx))
	t.Cleanup(func() { must(rlock.New(c, "ur-lock")).Unlock(held) })
	for _, args := range [][]string{{"unlock", "ur-lock"}, {"unlock"}, {"unlock", "--force"}, {"unlock", "--force", "a", "b"}, {"unlock", "--force", "redisync_x"}} {
		p := tool(t, addr, args...)
		if code := p.run(); code != exitUsage {
			t.Errorf("want exit %d\n%v", exitUsage, p)
		}
	}
	if held.Err() != nil {
		t.Error("unlock without --force broke the lock")
	}
}
