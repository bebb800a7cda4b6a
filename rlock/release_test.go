package rlock

import (
	"context"
	"testing"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

// A release sent again after a network error (the script run twice with the same request) releases
// once: from two holds, one is left, whether the client counted them or not (then the latch
// answers); from one, the lock is free and another owner's hold that followed is kept.
func TestReleaseResent(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	l, err := New(c, "resent")
	if err != nil {
		t.Fatal(err)
	}
	p := &l.p
	outer, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Lock(outer)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := core.OwnerID(inner)
	field := p.Field(owner)
	release := func(latch, held, resent string) int64 {
		t.Helper()
		keys := append(p.keys[:], latch)
		args := []string{p.leaseMs, field, p.c.Publish(), latchTTL, p.c.NumSub(), held, resent}
		n, err := p.c.Run(ctx, releaseScript, keys, args).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := func() string { return testkit.DoString(t, rdb, "HGET", "resent", field) }

	latch := p.c.RequestKey(p.latch)
	if got := release(latch, "2", "0"); got != 1 {
		t.Fatalf("first send of the inner release: %d, want 1", got)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", latch); n != "0" {
		t.Errorf("a release of the holds the client counted wrote its latch: %s", n)
	}
	if got := release(latch, "2", "1"); got != 1 || count() != "1" {
		t.Fatalf("re-sent inner release: %d with count %s, want 1 with count 1", got, count())
	}
	testkit.Do(t, rdb, "HINCRBY", "resent", field, "1") // two holds again, as if re-entered
	latch = p.c.RequestKey(p.latch)
	if got := release(latch, "0", "0"); got != 1 { // held unknown: the latch answers
		t.Fatalf("first send of a release of uncounted holds: %d, want 1", got)
	}
	if got := release(latch, "0", "1"); got != 1 || count() != "1" {
		t.Fatalf("re-sent release of uncounted holds: %d with count %s, want 1 with count 1", got, count())
	}
	testkit.Do(t, rdb, "DEL", latch)
	latch = p.c.RequestKey(p.latch)
	if got := release(latch, "1", "0"); got != 0 {
		t.Fatalf("first send of the last release: %d, want 0", got)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", latch); n != "0" {
		t.Errorf("the last release wrote its latch: %s", n)
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
	if got := release(latch, "1", "1"); got != -2 {
		t.Fatalf("re-sent last release: %d, want -2 (gone, perhaps by the first send)", got)
	}
	if ok, err := other.IsHeld(held); !ok || err != nil {
		t.Fatalf("the re-sent release took another owner's hold: held %v, %v", ok, err)
	}
	if got := release(p.c.RequestKey(p.latch), "1", "0"); got != -1 {
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
