package locksuite

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
)

// TestFencing: with WithFencing every acquisition, re-entries included and from any Client, takes a
// token greater than every token before it, kept in a counter that outlives the lock (the only key
// a free fenced lock keeps); a lock without the option has no token.
func (s *Suite) TestFencing() {
	s.need(s.Kind.Fencing, "fencing")
	s.each(func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		o := Options{Fencing: true}
		before := tg.Keys(t)
		kept := s.kept(n, o)
		rdb := tg.Redis(t)
		t.Cleanup(func() { // the counter is kept by design, but not on the servers the next tests share
			for _, k := range kept {
				testkit.Do(t, rdb, "DEL", k)
			}
		})
		var fenced []Fenced
		var clients []*redisync.Client
		for range 2 {
			c := tg.Client(t)
			clients = append(clients, c)
			f, ok := s.newLock(t, c, n, o).(Fenced)
			require.True(t, ok, "a lock made with Options.Fencing is no Fenced")
			fenced = append(fenced, f)
		}
		var last int64
		next := func(l Fenced, ctx context.Context, what string) {
			t.Helper()
			tok, ok := l.Token(ctx)
			require.True(t, ok, "%s has no token", what)
			require.Greater(t, tok, last, "%s's token after %d", what, last)
			last = tok
		}
		for range 5 {
			for _, l := range fenced {
				outer := lock(t, l, context.Background())
				next(l, outer, "an acquisition")
				if s.Kind.Reentrant {
					inner := lock(t, l, outer)
					next(l, inner, "a re-entry")
					unlock(t, l, inner)
				}
				unlock(t, l, outer)
			}
		}
		c := tg.Client(t)
		clients = append(clients, c)
		if plain, ok := s.newLock(t, c, n, Options{}).(Fenced); ok {
			held := lock(t, plain, context.Background())
			_, ok := plain.Token(held)
			require.False(t, ok, "a lock without fencing has a token")
			unlock(t, plain, held)
		}
		s.clean(t, tg, before, scope{names: []string{n}, o: o}, clients...)
		left := tg.NewKeys(t, before)
		require.NotEmpty(t, left, "no fencing counter kept")
		found := false
		for _, k := range left {
			found = found || testkit.DoString(t, rdb, "GET", k) == strconv.FormatInt(last, 10)
		}
		require.True(t, found, "no key kept (%q) holds the last token, %d", left, last)
	})
}
