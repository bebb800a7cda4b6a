package multilock

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

// The group scripts sent again after a lost answer (MODE 1) or to give back an acquisition whose
// answer never came (MODE 2), driven by hand with the arguments the engine gives them, where one owner
// holds overlapping value sets: the case where hold counts cannot tell what a lost send did.

type groupCalls struct {
	t           *testing.T
	rdb         rueidis.Client
	group, memo string
	owner       string
}

func newGroupCalls(t *testing.T, tg *testkit.Target) *groupCalls {
	group := groupName("once")
	g := &groupCalls{t: t, rdb: tg.Redis(t), group: group, memo: "redisync_once:{" + group + "}:", owner: "c0ffee00-0000-4000-8000-000000000000:1"}
	t.Cleanup(func() { // the memos: the client that deletes them is played by hand here
		testkit.Do(t, g.rdb, "EVAL", "for _, k in ipairs(redis.call('keys', ARGV[1])) do redis.call('del', k) end", "0", g.memo+"*")
	})
	return g
}

func (g *groupCalls) fields(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = field(v)
	}
	return out
}

// acquire sends the acquisition of values under rid, as script (the script or a variant of it).
func (g *groupCalls) acquire(script *lua.Script, rid string, values ...string) []int64 {
	g.t.Helper()
	args := append([]string{g.owner, rid, "30000", "1"}, g.fields(values)...)
	res, err := script.Exec(context.Background(), g.rdb, []string{g.group, g.memo}, args).AsIntSlice()
	require.NoError(g.t, err)
	return res
}

// release sends the release of values under rid, the client counting held acquisitions.
func (g *groupCalls) release(script *lua.Script, rid string, held int, values ...string) int64 {
	g.t.Helper()
	args := append([]string{g.owner, strconv.Itoa(held), rid, "30000", "publish"}, g.fields(values)...)
	channel := "redisson_lock__channel:{" + g.group + "}"
	n, err := script.Exec(context.Background(), g.rdb, []string{g.group, channel, g.memo}, args).AsInt64()
	require.NoError(g.t, err)
	return n
}

func (g *groupCalls) counts(values ...string) []string {
	g.t.Helper()
	h := hash(g.t, g.rdb, g.group)
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = h[field(v)+":"+g.owner+":lock_count"]
	}
	return out
}

func TestGroupScriptsActOnce(t *testing.T) {
	tg := testkit.Standalone(t)
	acquire, release := groupSpec.Scripts.Acquire, groupSpec.Scripts.Release

	t.Run("acquisition sent again", func(t *testing.T) {
		g := newGroupCalls(t, tg)
		first := g.acquire(acquire, "r1", "a", "b")
		require.Equal(t, int64(1), first[0])
		require.Equal(t, first, g.acquire(acquire.Resent(), "r1", "a", "b"), "the re-sent try answers the first")
		require.Equal(t, []string{"1", "1"}, g.counts("a", "b"), "the re-sent try acquired again")
		require.Equal(t, int64(0), g.release(release, "r2", 1, "a", "b"))
		requireGone(t, g.rdb, g.group)
	})

	// The first send of {a} never ran; meanwhile the owner's hold of {a, x} acquired, so that a's count
	// is the one the first send would have made. The re-sent try must acquire, not take that count
	// for its own.
	t.Run("acquisition lost, overlapping hold taken meanwhile", func(t *testing.T) {
		g := newGroupCalls(t, tg)
		g.acquire(acquire, "other", "a", "x")
		res := g.acquire(acquire.Resent(), "lost", "a")
		require.Equal(t, int64(1), res[0])
		require.Equal(t, []string{"2", "1"}, g.counts("a", "x"))
		require.Equal(t, int64(0), g.release(release, "r3", 1, "a"))
		require.Equal(t, int64(0), g.release(release, "r4", 1, "a", "x"))
		requireGone(t, g.rdb, g.group)
	})

	// The owner holds {a, b} and {b, c}: b counts both. Releasing {a, b}, whose answer is lost, and
	// sending it again, releases once: b keeps the other hold's count.
	t.Run("release sent again, overlapping hold", func(t *testing.T) {
		g := newGroupCalls(t, tg)
		g.acquire(acquire, "h1", "a", "b")
		g.acquire(acquire, "h2", "b", "c")
		require.Equal(t, int64(0), g.release(release, "r1", 1, "a", "b"))
		require.Equal(t, int64(0), g.release(release.Resent(), "r1", 1, "a", "b"), "the re-sent release answers the first")
		require.Equal(t, []string{"", "1", "1"}, g.counts("a", "b", "c"), "the re-sent release released again")
		require.Equal(t, int64(0), g.release(release, "r2", 1, "b", "c"))
		requireGone(t, g.rdb, g.group)
	})

	// A re-entered hold released, the answer lost: the counts tell (held - 1 left on every value).
	t.Run("release of a re-entered hold sent again", func(t *testing.T) {
		g := newGroupCalls(t, tg)
		g.acquire(acquire, "h1", "a", "b")
		g.acquire(acquire, "h2", "a", "b")
		require.Equal(t, int64(1), g.release(release, "r1", 2, "a", "b"))
		require.Equal(t, int64(1), g.release(release.Resent(), "r1", 2, "a", "b"))
		require.Equal(t, []string{"1", "1"}, g.counts("a", "b"))
		require.Equal(t, int64(0), g.release(release, "r2", 1, "a", "b"))
		require.Equal(t, int64(0), g.release(release.Resent(), "r2", 1, "a", "b"))
		requireGone(t, g.rdb, g.group)
	})

	// The give-back of an acquisition whose answer never came gives back what it took, once, and
	// nothing when the acquisition never ran.
	t.Run("give-back", func(t *testing.T) {
		g := newGroupCalls(t, tg)
		g.acquire(acquire, "unsure", "a", "b")
		require.Equal(t, int64(0), g.release(release.Undo(), "unsure", 1, "a", "b"))
		require.Equal(t, int64(-3), g.release(release.Undo(), "unsure", 1, "a", "b"), "a give-back sent again")
		requireGone(t, g.rdb, g.group)
		require.Equal(t, int64(-3), g.release(release.Undo(), "never-ran", 1, "a", "b"))
		g.acquire(acquire, "held", "a")
		require.Equal(t, int64(-3), g.release(release.Undo(), "never-ran-2", 1, "a"), "a give-back that finds another hold")
		require.Equal(t, []string{"1"}, g.counts("a"))
		require.Equal(t, int64(0), g.release(release, "r", 1, "a"))
		requireGone(t, g.rdb, g.group)
	})
}
