package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/pubsub"
)

// A try that acquired but reports an error (a write the replicas did not acknowledge) is given back
// with Undo, and Acquire returns the error, whether or not the caller's ctx can end.
func TestAcquireGivesBackTryWithError(t *testing.T) {
	_, c := testkit.Mini(t)
	cc := (*core.Client)(c)
	notReplicated := &core.ReplicationError{Acked: 0, Want: 1}
	for name, ctx := range map[string]context.Context{
		"plain ctx": context.Background(),
		"cancelable ctx": func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			t.Cleanup(cancel)
			return ctx
		}(),
	} {
		undone := 0
		_, err := cc.Acquire(ctx, time.Second, core.Wait{
			Channel: "undo-test", Weight: 1, Policy: pubsub.WakeOne,
			Try:  func(context.Context) (bool, time.Duration, error) { return true, 0, notReplicated },
			Undo: func(context.Context) { undone++ },
		})
		if !errors.Is(err, core.ErrNotReplicated) {
			t.Fatalf("%s: %v, want ErrNotReplicated", name, err)
		}
		if undone != 1 {
			t.Fatalf("%s: Undo ran %d times, want 1", name, undone)
		}
	}
}
