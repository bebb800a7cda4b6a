package locksuite

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/testkit"
)

// TestFanOut: goroutines fanned out from one held ctx (as errgroup does) re-enter through it. On an
// exclusive kind they take turns: never two inside at once, and no update lost. On a shared kind
// they all hold at once, keep other owners out meanwhile, and release in any order. Either way the
// holder's own hold is as before once they are done.
func (s *Suite) TestFanOut() {
	s.need(s.Kind.Reentrant, "re-entry")
	s.each(func(t *testing.T, tg *testkit.Target) {
		n := name(t)
		l := s.newLock(t, tg.Client(t), n, Options{})
		held := lock(t, l, context.Background())
		if s.Kind.Shared {
			s.fanOutShares(t, tg, l, held, n)
		} else {
			fanOutTakesTurns(t, l, held)
		}
		require.Equal(t, 1, holdCount(t, l, held), "the holder's hold count after the fan-out")
		alive(t, "after the fan-out", held)
		unlock(t, l, held)
	})
}

func fanOutTakesTurns(t *testing.T, l Lock, held context.Context) {
	const goroutines, rounds = 8, 5
	var sec section
	var ctr counter
	var failed errs
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				in, err := l.Lock(held)
				if err != nil {
					failed.add(err)
					return
				}
				sec.enter(true)
				ctr.incr()
				sec.leave(true)
				if err := l.Unlock(in); err != nil {
					failed.add(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, failed.err())
	require.EqualValues(t, 1, sec.maxExclusive.Load(), "goroutines of one held ctx inside at once")
	require.Equal(t, goroutines*rounds, ctr.value(), "updates made inside the section")
}

func (s *Suite) fanOutShares(t *testing.T, tg *testkit.Target, l Lock, held context.Context, n string) {
	const goroutines = 4
	var sec section
	holds := make(chan context.Context, goroutines)
	var failed errs
	for range goroutines {
		go func() {
			in, err := l.Lock(held)
			if err != nil {
				failed.add(err)
				holds <- nil
				return
			}
			sec.enter(false)
			holds <- in
		}()
	}
	// Nobody leaves before every goroutine is in: they all hold at once.
	var in []context.Context
	timeout := time.After(30 * time.Second)
	for range goroutines {
		select {
		case h := <-holds:
			in = append(in, h)
		case <-timeout:
			t.Fatalf("%d of %d goroutines of one held ctx got in within 30s", len(in), goroutines)
		}
	}
	require.NoError(t, failed.err())
	require.EqualValues(t, goroutines, sec.maxShared.Load(), "goroutines of one held ctx inside at once")
	require.Equal(t, goroutines+1, holdCount(t, l, held), "hold count with every goroutine in")
	refused(t, s.rival(t, tg.Client(t), n), "fanned-out holders in")
	for i := len(in) - 1; i >= 0; i-- { // not in the order they came in
		sec.leave(false)
		require.NoError(t, l.Unlock(in[i]), "Unlock of fanned-out hold %d", i)
	}
}
