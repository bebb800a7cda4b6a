package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// Margin is what a call may take beyond the bound it promises, on a loaded machine: seconds, far
// below the "never" that a missing bound gives.
const Margin = 3 * time.Second

// ReturnsWithin waits for call, started at start, and fails the test unless it returns within bound
// of start (plus Margin). It returns call's error.
func ReturnsWithin(t testing.TB, start time.Time, bound time.Duration, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Until(start.Add(bound + Margin))):
		t.Fatalf("%s has not returned after %v, want within %v", what, time.Since(start), bound)
		return nil
	}
}

// Stalls are the ways Stall stops a server from answering: "CLIENT PAUSE WRITE" holds every write
// (scripts included) while the server answers reads, "SIGSTOP" freezes the process.
var Stalls = []string{"CLIENT PAUSE WRITE", "SIGSTOP"}

// Stall stops s from answering in one of the ways of Stalls, until resume is called or the test
// ends.
func Stall(t testing.TB, s *redistest.Server, how string) (resume func()) {
	t.Helper()
	switch how {
	case "CLIENT PAUSE WRITE":
		if _, err := s.Do("CLIENT", "PAUSE", "60000", "WRITE"); err != nil {
			t.Fatal(err)
		}
		resume = func() { s.Do("CLIENT", "UNPAUSE") }
	case "SIGSTOP":
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		resume = func() { s.Resume() }
	default:
		t.Fatalf("unknown stall %q", how)
	}
	t.Cleanup(resume)
	return resume
}

// Bounds are the two ways a wait ends at a deadline: its ctx's ("ctx"), or the wait argument of the
// primitive's Try form ("wait").
var Bounds = []string{"ctx", "wait"}

// Bounded starts, on a goroutine of its own, an acquisition bounded by d in the way bound names (one
// of Bounds): acquire with a ctx whose deadline is d away, or try with d as its wait bound. Its
// error arrives on the channel; BoundedErr says which error the bound gives.
func Bounded(bound string, d time.Duration, acquire func(context.Context) error, try func(context.Context, time.Duration) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		if bound == "ctx" {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			done <- acquire(ctx)
			return
		}
		done <- try(context.Background(), d)
	}()
	return done
}

// BoundedErr is the error of an acquisition that Bounded ended by bound: the ctx's deadline, or
// redisync.ErrNotAcquired.
func BoundedErr(bound string) error {
	if bound == "ctx" {
		return context.DeadlineExceeded
	}
	return redisync.ErrNotAcquired
}
