package rlock

import (
	"context"
	"maps"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
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
	side, run := rawRelease(t, c, "resent", field)
	release := func(rid, held string, resent bool) int64 {
		t.Helper()
		n, err := run(rid, held, resent).AsInt64()
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

// rawRelease returns the side keys of the lock name on c, and a release of field's hold on it sent
// raw with the release script (its Resent variant when resent), as a Client sends it.
func rawRelease(t *testing.T, c *redisync.Client, name, field string) ([]string, func(rid, held string, resent bool) rueidis.RedisResult) {
	cc := core.Of(c)
	// The release's KEYS and ARGV, as its header names them.
	side := cc.SideKeys(name, "redisson_lock_token", "redisync_lock_waiters", "redisync_lock_clients",
		"redisson_lock__channel", "redisync_lock__wake:", "redisync_once:")
	return side, func(rid, held string, resent bool) rueidis.RedisResult {
		s := spec.Scripts.Release
		if resent {
			s = s.Resent()
		}
		args := []string{field, held, rid, "30000", cc.Values.Publish, cc.Values.NumSub}
		return s.Exec(context.Background(), cc.RDB(), append([]string{name}, side...), args)
	}
}

// The last release of a hold, as the client counts it, drops the owner's field (HDEL: the hash goes
// with it) without reading the count first, and changes nothing where the field is not there: a
// hash held by another owner (a Redisson process) answers -1, a name that holds other data
// ErrWrongType.
func TestLastReleaseDropsTheField(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t)
	rdb := tg.Redis(t)
	ctx := context.Background()
	l, err := New(c, "last")
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := tg.Calls(t, "hget", "del", "hscan", "exists")
	dropped := tg.Calls(t, "hdel")
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if n := tg.Calls(t, "hget", "del", "hscan", "exists") - before; n != 0 {
		t.Errorf("the last release read or deleted the hash besides dropping the field: %d calls", n)
	}
	if n := tg.Calls(t, "hdel") - dropped; n != 1 {
		t.Errorf("the last release dropped the field with %d HDEL, want 1", n)
	}
	if n := testkit.DoString(t, rdb, "EXISTS", "last"); n != "0" {
		t.Fatalf("the hash outlived its last field")
	}

	owner, _ := hold.OwnerID(held)
	field := c.ID() + ":" + strconv.FormatInt(owner, 10)
	cc := core.Of(c)
	_, release := rawRelease(t, c, "last", field)
	for _, tc := range []struct {
		name    string
		write   []string
		want    int64
		refused bool
	}{
		{"held by a Redisson process", []string{"HSET", "last", "8a1f2e1c-0d5e-4d2b-9f55-0e8c3f1b7a10:1", "1"}, -1, false},
		{"an application's string", []string{"SET", "last", "data"}, 0, true},
		{"an application's hash", []string{"HSET", "last", "name", "value"}, 0, true},
		{"an application's list", []string{"RPUSH", "last", "a"}, 0, true},
	} {
		testkit.Do(t, rdb, "DEL", "last")
		testkit.Do(t, rdb, tc.write...)
		state := tg.State(t, rdb, "last")
		n, err := release(cc.RequestID(), "1", false).AsInt64()
		if tc.refused {
			testkit.OwnRefusal(t, tc.name, err)
		} else if err != nil || n != tc.want {
			t.Errorf("%s: (%d, %v), want %d", tc.name, n, err, tc.want)
		}
		if after := tg.State(t, rdb, "last"); !maps.Equal(after, state) {
			t.Errorf("%s: changed to %v, was %v", tc.name, after, state)
		}
	}
}
