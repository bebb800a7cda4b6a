package rlock

import (
	"context"
	"strconv"
	"testing"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/testkit"
)

// A release sent again after a network error (its Resent variant, with the same request) releases
// once: from two holds, one is left, whether the client counted them or not (then the memo answers);
// from one, the lock is free and another owner's hold that followed is kept.
func TestReleaseResent(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	l, err := New(c, "resent")
	if err != nil {
		t.Fatal(err)
	}
	outer, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Lock(outer)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := hold.OwnerID(inner)
	field := c.ID() + ":" + strconv.FormatInt(owner, 10)
	cc := core.Of(c)
	// The release's KEYS and ARGV, as its header names them.
	side := cc.SideKeys("resent", "redisson_lock_token", "redisync_lock_waiters", "redisync_lock_clients",
		"redisson_lock__channel", "redisync_lock__wake:", "redisync_once:")
	script := spec.Scripts.Release
	release := func(rid, held string, resent bool) int64 {
		t.Helper()
		s := script
		if resent {
			s = s.Resent()
		}
		args := []string{field, held, rid, "30000", cc.Values.Publish, cc.Values.NumSub}
		n, err := s.Exec(ctx, cc.RDB(), append([]string{"resent"}, side...), args).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := func() string { return testkit.DoString(t, rdb, "HGET", "resent", field) }
	memo := func(rid string) string { return testkit.DoString(t, rdb, "EXISTS", side[5]+rid) }

	rid := cc.RequestID()
	if got := release(rid, "2", false); got != 1 {
		t.Fatalf("first send of the inner release: %d, want 1", got)
	}
	if n := memo(rid); n != "0" {
		t.Errorf("a release of the holds the client counted kept a memo: %s", n)
	}
	if got := release(rid, "2", true); got != 1 || count() != "1" {
		t.Fatalf("re-sent inner release: %d with count %s, want 1 with count 1", got, count())
	}
	testkit.Do(t, rdb, "HINCRBY", "resent", field, "1") // two holds again, as if re-entered
	rid = cc.RequestID()
	if got := release(rid, "0", false); got != 1 { // not what the client counted: the memo answers
		t.Fatalf("first send of a release of uncounted holds: %d, want 1", got)
	}
	if got := release(rid, "0", true); got != 1 || count() != "1" {
		t.Fatalf("re-sent release of uncounted holds: %d with count %s, want 1 with count 1", got, count())
	}
	testkit.Do(t, rdb, "DEL", side[5]+rid)
	rid = cc.RequestID()
	if got := release(rid, "1", false); got != 0 {
		t.Fatalf("first send of the last release: %d, want 0", got)
	}
	if n := memo(rid); n != "0" {
		t.Errorf("the last release kept a memo: %s", n)
	}
	// Another owner takes the lock before the re-sent request arrives: it keeps it.
	other, err := New(c, "resent")
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.TryLock(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := release(rid, "1", true); got != 0 {
		t.Fatalf("re-sent last release: %d, want 0 (released by the first send)", got)
	}
	if ok, err := other.IsHeld(held); !ok || err != nil {
		t.Fatalf("the re-sent release took another owner's hold: held %v, %v", ok, err)
	}
	if got := release(cc.RequestID(), "1", false); got != -1 {
		t.Errorf("a new release of a hold gone: %d, want -1", got)
	}
	if err := other.Unlock(held); err != nil {
		t.Fatal(err)
	}
	// The client's own records of the two holds: gone in Redis, so Unlock reports it.
	if err := l.Unlock(inner); err == nil {
		t.Error("Unlock of a hold released behind the client's back succeeded")
	}
}
