package redisync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// TestRedisRefusals: Redis's own refusals come back as the package's sentinels with a sentence,
// never with the script's internals, and with Redis's error still reachable (errors.As): NOPERM as
// ErrNoPermission, out of memory as ErrRefused; a refused acquisition holds nothing.
func TestRedisRefusals(t *testing.T) {
	tg := testkit.Own(t)
	srv := tg.Servers[0]
	if _, err := srv.Do("ACL", "SETUSER", "noscripts", "on", ">secret", "~*", "&*", "+@all", "-evalsha", "-eval"); err != nil {
		t.Fatal(err)
	}
	c, err := redisync.New(rueidis.ClientOption{InitAddress: tg.Addrs, DisableCache: true, Username: "noscripts", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	l, err := rlock.New(c, "refused")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err, sentinel error) {
		t.Helper()
		var re *rueidis.RedisError
		if !errors.Is(err, sentinel) || !errors.As(err, &re) {
			t.Errorf("%s: %v, want %v with Redis's error reachable", what, err, sentinel)
		}
		testkit.NoInternals(t, what, err)
	}
	_, err = l.TryLock(ctx, 0)
	check("TryLock without EVALSHA", err, redisync.ErrNoPermission)
	_, err = l.IsLocked(ctx)
	check("IsLocked without EVALSHA", err, redisync.ErrNoPermission)

	own := tg.Client(t)
	for _, cfg := range [][]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
		if _, err := srv.Do("CONFIG", "SET", cfg[0], cfg[1]); err != nil {
			t.Fatal(err)
		}
	}
	l, _ = rlock.New(own, "refused")
	_, err = l.TryLock(ctx, 0)
	check("TryLock out of memory", err, redisync.ErrRefused)
	s, _ := semaphore.New(own, "refused-semaphore")
	check("AddPermits out of memory", s.AddPermits(ctx, 1), redisync.ErrRefused)
	if _, err := srv.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	if locked, err := l.IsLocked(ctx); err != nil || locked {
		t.Fatalf("after the refusals: locked %v, %v", locked, err)
	}
}
