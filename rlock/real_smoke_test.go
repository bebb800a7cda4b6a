package rlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestRealSmoke(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		var sec testkit.Section
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < 8; i++ {
			c := tg.Client(t)
			l, _ := rlock.New(c, "smoke")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 50; j++ {
					ctx, err := l.Lock(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					sec.Enter()
					time.Sleep(50 * time.Microsecond)
					sec.Leave()
					if err := l.Unlock(ctx); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%d acquisitions in %v, max %d", sec.Entries(), time.Since(start), sec.Max())
	})
}
