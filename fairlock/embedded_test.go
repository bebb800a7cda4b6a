package fairlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// A try that looks at the queue's head reads the head's record whatever Lua the server runs: on an
// embedded server (gopher-lua), string.match returns no value at all when nothing matches, and a
// bare tonumber() of that failed the script, so a waiter behind a head with a grant's mark errored.
func TestHeadWithGrantMarkOnEmbeddedServer(t *testing.T) {
	m, c := testkit.Mini(t)
	l, err := fairlock.New(c, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	holder, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Another owner is the queue's head, its record a grant's mark ("-<token> <tag>").
	m.Lpush("redisson_lock_queue:{embedded}", "ghost:1")
	m.ZAdd("redisson_lock_timeout:{embedded}", float64(time.Now().Add(time.Hour).UnixMilli()), "ghost:1")
	m.HSet("redisync_fair_waiters:{embedded}", "ghost:1", "-0 departed")
	_, err = l.TryLock(context.Background(), 50*time.Millisecond)
	if !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock behind a head with a grant's mark = %v, want ErrNotAcquired", err)
	}
	if err := l.Unlock(holder); err != nil {
		t.Fatal(err)
	}
}
