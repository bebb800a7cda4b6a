package testkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/layout"
)

// Foreign is data that is not a primitive's, as it may already be under the primitive's name or one
// of its side keys: an application's string, hash or list, or another primitive's layout.
type Foreign struct {
	Name string // "string", "hash", "lock hash", ...
	// Layout names the primitives whose own layout this is ("lock": Redisson's lock hash, "rwlock",
	// "group", "limiter", "count": a semaphore's or a latch's count, "semaphore": a count a latch
	// refuses); "" for an application's.
	Layout string
	cmds   [][]string // "K" stands for the key
}

const foreignOwner = "1c2e7a52-0b7e-4f3a-9d7e-5f0c6a1b2c3d:7"

// Foreigns are the kinds of data every primitive finds under its names in the tests.
var Foreigns = []Foreign{
	{Name: "string", cmds: [][]string{{"SET", "K", "hello"}}},
	{Name: "hash", cmds: [][]string{{"HSET", "K", "user", "alice"}}},
	{Name: "list", cmds: [][]string{{"RPUSH", "K", "x", "y"}}},
	{Name: "set", cmds: [][]string{{"SADD", "K", "x"}}},
	{Name: "sorted set", cmds: [][]string{{"ZADD", "K", "1", "x"}}},
	{Name: "stream", cmds: [][]string{{"XADD", "K", "*", "f", "v"}}},
	{Name: "count", Layout: "count", cmds: [][]string{{"SET", "K", "5"}}},
	{Name: "negative count", Layout: "semaphore", cmds: [][]string{{"SET", "K", "-3"}}},
	{Name: "lock hash", Layout: "lock", cmds: [][]string{{"HSET", "K", foreignOwner, "1"}}},
	{Name: "read-write lock hash", Layout: "rwlock", cmds: [][]string{{"HSET", "K", "mode", "read", foreignOwner, "1"}}},
	{Name: "group lock hash", Layout: "group", cmds: [][]string{{"HSET", "K",
		"Ap8bd9sAa0JxX6D2h0Lbyw", foreignOwner,
		"Ap8bd9sAa0JxX6D2h0Lbyw:" + foreignOwner + ":expire_time", "99999999999999",
		"Ap8bd9sAa0JxX6D2h0Lbyw:" + foreignOwner + ":lock_count", "1"}}},
	{Name: "rate limiter hash", Layout: "limiter", cmds: [][]string{{"HSET", "K", "rate", "10", "interval", "1000", "type", "0", "keepAliveTime", "0"}}},
}

// ForeignsBut returns the Foreigns that are not of the given layouts: what a primitive of those
// layouts must refuse under its name.
func ForeignsBut(layouts ...string) []Foreign {
	var out []Foreign
	for _, f := range Foreigns {
		if f.Layout == "" || !slices.Contains(layouts, f.Layout) {
			out = append(out, f)
		}
	}
	return out
}

// Write writes f under key, with no expiry.
func (f Foreign) Write(t testing.TB, rdb rueidis.Client, key string) {
	t.Helper()
	for _, c := range f.cmds {
		args := slices.Clone(c)
		for i, a := range args {
			if a == "K" {
				args[i] = key
			}
		}
		Do(t, rdb, args...)
	}
}

// State returns what tg holds under the keys whose names contain part: for each, its type, its
// value as DUMP gives it, and whether it has an expiry. Two States are equal when nothing under
// those keys was changed, created or deleted.
//
// It first waits for the memos of calls that have answered to go: a Client deletes them in the
// background, so one may still be there, or be going, when the call has returned.
func (tg *Target) State(t testing.TB, rdb rueidis.Client, part string) map[string]string {
	t.Helper()
	var keys []string
	Eventually(t, 30*time.Second, func() error {
		keys = keys[:0]
		for _, k := range tg.Keys(t) {
			if !strings.Contains(k, part) {
				continue
			}
			if strings.HasPrefix(k, layout.Memo) {
				return fmt.Errorf("memo %s still there", k)
			}
			keys = append(keys, k)
		}
		return nil
	})
	state := make(map[string]string)
	for _, k := range keys {
		ctx := context.Background()
		res := rdb.DoMulti(ctx, rdb.B().Type().Key(k).Build(), rdb.B().Dump().Key(k).Build(), rdb.B().Pttl().Key(k).Build())
		typ, _ := res[0].ToString()
		dump, _ := res[1].ToString()
		ttl, _ := res[2].AsInt64()
		state[k] = fmt.Sprintf("%s %q expires:%v", typ, dump, ttl >= 0)
	}
	return state
}

// internals are what no error may show: a script's SHA or line, Go's parse errors.
var internals = regexp.MustCompile(`user_script|@user_|script: |[0-9a-f]{40}|strconv\.|rueidis`)

// NoInternals fails the test when err's message shows a script's or a library's internals.
func NoInternals(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil && internals.MatchString(err.Error()) {
		t.Errorf("%s: the error shows internals: %v", what, err)
	}
}

// OwnRefusal fails the test unless err carries a script's own refusal of what it found (refuse.lua's
// "WRONGTYPE redisync:<what> <key>"), rather than Redis's WRONGTYPE from a command the script ran
// into: that one says nothing of what the key holds, and a script may have written before it.
func OwnRefusal(t testing.TB, what string, err error) {
	t.Helper()
	var re *rueidis.RedisError
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "WRONGTYPE redisync:") {
		t.Errorf("%s: %v, want the script's own refusal", what, err)
	}
}

// Calls are a primitive's methods, each called with its arguments, by name.
type Calls map[string]func() error

// Locker is what every lock has, composites included.
type Locker interface {
	Lock(ctx context.Context) (context.Context, error)
	LockFor(ctx context.Context, lease time.Duration) (context.Context, error)
	TryLock(ctx context.Context, wait time.Duration) (context.Context, error)
	TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error)
	IsHeld(ctx context.Context) (bool, error)
	IsHeldBy(ctx context.Context, owner int64) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	ForceUnlock(ctx context.Context) (bool, error)
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

// LockerCalls are the methods of Locker on l: owner is a ctx of an owner (one that holds l, or
// none), and ran is set when Do runs its fn. Lock does not wait: a wait would end with its deadline.
func LockerCalls(l Locker, owner context.Context, ran *bool) Calls {
	ctx := context.Background()
	id, _ := redisync.OwnerID(owner)
	return Calls{
		"Lock": func() error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := l.Lock(ctx)
			return err
		},
		"LockFor": func() error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := l.LockFor(ctx, time.Minute)
			return err
		},
		"TryLock":                func() error { _, err := l.TryLock(ctx, 0); return err },
		"TryLock with a wait":    func() error { _, err := l.TryLock(ctx, time.Minute); return err },
		"TryLockFor":             func() error { _, err := l.TryLockFor(ctx, 0, time.Minute); return err },
		"TryLockFor with a wait": func() error { _, err := l.TryLockFor(ctx, time.Minute, time.Minute); return err },
		"IsHeld":                 func() error { _, err := l.IsHeld(owner); return err },
		"IsHeldBy":               func() error { _, err := l.IsHeldBy(ctx, id); return err },
		"IsLocked":               func() error { _, err := l.IsLocked(ctx); return err },
		"ForceUnlock":            func() error { _, err := l.ForceUnlock(ctx); return err },
		"Do":                     func() error { return l.Do(ctx, func(context.Context) error { *ran = true; return nil }) },
	}
}

// RequireAll runs every call and fails the test unless each returns an error matching want, whose
// message shows no internals.
func RequireAll(t testing.TB, want error, calls Calls) {
	t.Helper()
	for _, what := range slices.Sorted(maps.Keys(calls)) {
		err := calls[what]()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
		NoInternals(t, what, err)
	}
}

// RequireRefusals is RequireAll for redisync.ErrWrongType where every call must fail by its script's
// own refusal (OwnRefusal).
func RequireRefusals(t testing.TB, calls Calls) {
	t.Helper()
	for _, what := range slices.Sorted(maps.Keys(calls)) {
		err := calls[what]()
		if !errors.Is(err, errs.ErrWrongType) {
			t.Errorf("%s: %v, want %v", what, err, errs.ErrWrongType)
		}
		NoInternals(t, what, err)
		OwnRefusal(t, what, err)
	}
}
