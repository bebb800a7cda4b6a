package multilock

import (
	"context"
	"errors"
	"testing"

	"github.com/redisync/redisync"
	holds "github.com/redisync/redisync/internal/hold"
)

// IsHeld of a MultiLock: true while its owner holds every sub-lock and the hold it asks about has
// not ended; false for another owner, for an owner holding only some of the sub-locks, after Unlock
// (even while an outer hold of the same owner goes on), and once a sub-lock is gone. It answers
// after the caller's ctx ended, as Unlock does.
func TestMultiLockIsHeld(t *testing.T) {
	servers := startN(t, 2)
	ls := locks(t, servers, names3[:2])
	m := newMulti(t, ls...)
	ctx := context.Background()
	isHeld := func(what string, ctx context.Context, want bool) {
		t.Helper()
		got, err := m.IsHeld(ctx)
		if err != nil || got != want {
			t.Fatalf("IsHeld %s: %v, %v; want %v", what, got, err, want)
		}
	}
	var nilCtx context.Context
	if _, err := m.IsHeld(nilCtx); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("IsHeld(nil): %v, want ErrInvalidArgument", err)
	}
	isHeld("with a ctx without owner", ctx, false)

	outer, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	isHeld("of the hold", outer, true)
	other := holds.WithNewOwner(ctx)
	isHeld("of another owner", other, false)
	inner, err := m.TryLock(outer, 0)
	if err != nil {
		t.Fatal(err)
	}
	isHeld("of the inner hold", inner, true)
	if err := m.Unlock(inner); err != nil {
		t.Fatal(err)
	}
	isHeld("of the inner hold after its Unlock", inner, false)
	isHeld("of the outer hold after the inner Unlock", outer, true)
	if err := m.Unlock(outer); err != nil {
		t.Fatal(err)
	}
	isHeld("after Unlock", outer, false)

	// An owner that holds only one of the sub-locks does not hold the MultiLock.
	part, err := ls[0].Lock(other)
	if err != nil {
		t.Fatal(err)
	}
	isHeld("of an owner holding one sub-lock of two", part, false)
	if err := ls[0].Unlock(part); err != nil {
		t.Fatal(err)
	}

	// A hold whose caller's ctx ended stays held until Unlock.
	parent, cancel := context.WithCancel(ctx)
	held, err := m.Lock(parent)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	isHeld("after the caller's ctx ended", held, true)
	// A sub-lock gone (a failover lost it, say): not held, whether or not the hold noticed yet.
	if _, err := servers[1].Do("DEL", names3[1]); err != nil {
		t.Fatal(err)
	}
	isHeld("with a sub-lock gone", held, false)
	m.Unlock(held)
	requireNoKeys(t, servers, names3[0])
}

// IsHeld of a RedLock: true while its owner holds a majority of the sub-locks and the hold has not
// ended; false once fewer than a majority are held, and after Unlock.
func TestRedLockIsHeld(t *testing.T) {
	servers := startN(t, 3)
	const name = "rl-is-held"
	r := newRed(t, locks(t, servers, same(name, 3)))
	ctx := context.Background()
	isHeld := func(what string, ctx context.Context, want bool) {
		t.Helper()
		got, err := r.IsHeld(ctx)
		if err != nil || got != want {
			t.Fatalf("IsHeld %s: %v, %v; want %v", what, got, err, want)
		}
	}
	var nilCtx context.Context
	if _, err := r.IsHeld(nilCtx); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("IsHeld(nil): %v, want ErrInvalidArgument", err)
	}
	isHeld("with a ctx without owner", ctx, false)
	held, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	isHeld("of the hold", held, true)
	other := holds.WithNewOwner(ctx)
	isHeld("of another owner", other, false)
	// RedLock returns once a majority holds: on a loaded machine a slow server may have missed its
	// sub-lock already. Delete sub-locks until exactly two of three are held.
	holding := 0
	for _, s := range servers {
		if n, err := s.Do("EXISTS", name); err == nil && n == "1" {
			holding++
		}
	}
	for _, s := range servers {
		if holding <= 2 {
			break
		}
		if n, err := s.Do("DEL", name); err != nil {
			t.Fatal(err)
		} else if n == "1" {
			holding--
		}
	}
	if holding != 2 {
		t.Fatalf("%d of 3 sub-locks held after Lock, want at least 2", holding)
	}
	isHeld("with two of three sub-locks", held, true)
	if err := r.Unlock(held); err != nil {
		t.Fatal(err)
	}
	isHeld("after Unlock", held, false)

	again, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers[:2] {
		if _, err := s.Do("DEL", name); err != nil {
			t.Fatal(err)
		}
	}
	isHeld("with one of three sub-locks", again, false)
	r.Unlock(again)
	requireNoKeys(t, servers, name)
}
