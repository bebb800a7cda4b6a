package testkit

import (
	"context"
	"testing"
	"time"
)

// Acquired is the outcome of an acquisition run in the background: the ctx of the hold, or why not.
type Acquired struct {
	Ctx context.Context
	Err error
}

// Background runs acquire on a goroutine of its own and returns where its outcome arrives.
func Background(acquire func() (context.Context, error)) <-chan Acquired {
	out := make(chan Acquired, 1)
	go func() {
		ctx, err := acquire()
		out <- Acquired{ctx, err}
	}()
	return out
}

// Await returns the hold that arrives on ch, and fails t when the acquisition failed or took more
// than 10 s (generous: the machine may be busy).
func Await(t testing.TB, ch <-chan Acquired, what string) context.Context {
	t.Helper()
	select {
	case r := <-ch:
		if r.Err != nil {
			t.Fatalf("%s: %v", what, r.Err)
		}
		return r.Ctx
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not acquired within 10s", what)
		return nil
	}
}
