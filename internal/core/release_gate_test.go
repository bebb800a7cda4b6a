package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/pubsub"
	"github.com/redisync/redisync/internal/testkit"
)

// blockingRelease is a Releaser whose Release waits for proceed.
type blockingRelease struct {
	entered chan struct{}
	proceed chan struct{}
}

func (blockingRelease) Field(int64) string { return "f" }

func (r blockingRelease) Release(context.Context, int64, string, int) (int64, error) {
	r.entered <- struct{}{}
	<-r.proceed
	return 0, nil
}

// While a release of a hold is unanswered no acquisition of that owner is sent, not even a re-entry
// through the ctx being released: a release re-sent after a network error must never find a new
// acquisition's hold in place of the one it released (rlock_release.lua).
func TestNoAcquisitionWhileReleasing(t *testing.T) {
	_, c := testkit.Mini(t)
	cc := core.Of(c)
	ctx, owner := core.EnsureOwner(context.Background())
	spec := core.HoldSpec{Kind: "test", Name: "gate", Key: "gate", Field: "f", Owner: owner, Lease: time.Minute}
	tries := 0
	w := core.Wait{Channel: "gate-test", Weight: 1, Policy: pubsub.WakeOne,
		Try: func(context.Context) (bool, time.Duration, error) { tries++; return true, 0, nil }}
	held, err := cc.AcquireHold(ctx, spec, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	r := blockingRelease{entered: make(chan struct{}), proceed: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- cc.Unlock(held, "test", "gate", "gate", r) }()
	<-r.entered
	if _, err := cc.AcquireHold(held, spec, 0, w); !errors.Is(err, core.ErrNotAcquired) || tries != 1 {
		t.Fatalf("re-entry during the release: %v after %d tries, want ErrNotAcquired and no try", err, tries-1)
	}
	close(r.proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	again, err := cc.AcquireHold(ctx, spec, 0, w)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	r = blockingRelease{entered: make(chan struct{}, 1), proceed: make(chan struct{})}
	close(r.proceed)
	if err := cc.Unlock(again, "test", "gate", "gate", r); err != nil {
		t.Fatal(err)
	}
}

// resentGone answers as a release sent again that found the hold gone.
type resentGone struct{}

func (resentGone) Field(int64) string { return "f" }

func (resentGone) Release(context.Context, int64, string, int) (int64, error) {
	return 0, core.ErrResentGone
}

// A re-sent release that finds the hold gone released it when this client counted it as held, and
// reports ErrNotHeld when the client knows the hold was lost.
func TestResentReleaseFindsHoldGone(t *testing.T) {
	_, c := testkit.Mini(t)
	cc := core.Of(c)
	ctx, owner := core.EnsureOwner(context.Background())
	spec := core.HoldSpec{Kind: "test", Name: "resent", Key: "resent", Field: "f", Owner: owner, Lease: time.Minute}
	w := core.Wait{Channel: "resent-test", Weight: 1, Policy: pubsub.WakeOne,
		Try: func(context.Context) (bool, time.Duration, error) { return true, 0, nil }}
	held, err := cc.AcquireHold(ctx, spec, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Unlock(held, "test", "resent", "resent", resentGone{}); err != nil {
		t.Fatalf("held: %v, want released", err)
	}
	if !errors.Is(context.Cause(held), core.ErrReleased) {
		t.Fatalf("cause %v, want ErrReleased", context.Cause(held))
	}
	lost, err := cc.AcquireHold(ctx, spec, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	cc.LoseHolds("resent", core.ErrLost)
	if err := cc.Unlock(lost, "test", "resent", "resent", resentGone{}); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("lost: %v, want ErrNotHeld", err)
	}
}
