package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

// TestResentActsOnce sends the scripts of Release, UpdateRate and ClearExpire, then their Resent
// variants with the same request id, as the engine does after a lost answer, with other calls in
// between: the second send answers the first's answer and changes nothing, where acting again would
// give permits back twice, empty the window again, or find no TTL to clear. The same variant with a
// request id that never ran acts (the first send was lost on its way).
func TestResentActsOnce(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		c := tg.Client(t)
		rdb := tg.Redis(t)
		ctx := context.Background()
		name := "once-" + tg.Name + "-" + time.Now().Format("150405.000000000")
		l, err := New(c, name)
		require.NoError(t, err)
		value := l.keys[1]
		send := func(s *lua.Script, args ...string) []int64 {
			t.Helper()
			res, err := s.Exec(ctx, rdb, l.keys[:], args).ToAny()
			require.NoError(t, err)
			switch r := res.(type) {
			case int64:
				return []int64{r}
			case []any:
				out := make([]int64, len(r))
				for i, v := range r {
					out[i] = v.(int64)
				}
				return out
			}
			t.Fatalf("reply %v", res)
			return nil
		}
		get := func() string { return testkit.DoString(t, rdb, "GET", value) }

		_, err = l.TrySetRate(ctx, overall(10))
		require.NoError(t, err)
		require.NoError(t, l.Acquire(ctx, 5))

		// Release.
		rid := l.c.RequestID()
		require.Equal(t, []int64{1, 7}, send(releaseScript, "2", rid))
		require.NoError(t, l.Acquire(ctx, 1))
		require.Equal(t, "6", get())
		require.Equal(t, []int64{1, 7}, send(releaseScript.Resent(), "2", rid))
		require.Equal(t, "6", get(), "the resent Release gave the permits back again")
		require.Equal(t, []int64{1, 8}, send(releaseScript.Resent(), "2", l.c.RequestID()), "a Release whose first send was lost")
		require.Equal(t, "8", get())

		// UpdateRate without KeepState empties the window; a second send would empty it again.
		args := []string{"10", "3600000", "0", "0", "update", l.c.RequestID(), "0"}
		require.Equal(t, []int64{1}, send(setScript, args...))
		require.NoError(t, l.Acquire(ctx, 3))
		require.Equal(t, []int64{1}, send(setScript.Resent(), args...))
		require.Equal(t, "7", get(), "the resent UpdateRate emptied the window again")

		// ClearExpire: a second PERSIST would answer 0.
		testkit.Do(t, rdb, "PEXPIRE", name, "600000")
		rid = l.c.RequestID()
		require.Equal(t, []int64{1}, send(expireScript, "", rid))
		require.Equal(t, []int64{1}, send(expireScript.Resent(), "", rid))
		// Expire: the second send keeps the first's expiry.
		rid = l.c.RequestID()
		require.Equal(t, []int64{1}, send(expireScript, "600000", rid))
		testkit.Do(t, rdb, "PEXPIRE", name, "5000")
		require.Equal(t, []int64{1}, send(expireScript.Resent(), "600000", rid))
		ms, err := rdb.Do(ctx, rdb.B().Pttl().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		require.LessOrEqual(t, ms, int64(5000), "the resent Expire set the TTL again")
		_, err = l.Delete(ctx)
		require.NoError(t, err)
	})
}

func overall(rate int64) Config { return Config{Rate: rate, Interval: time.Hour} }
