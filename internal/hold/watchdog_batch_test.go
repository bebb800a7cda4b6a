package hold

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/lua"
)

// One renewal script call covers up to maxBatch holds of one kind: on a single server whatever the
// keys' cluster slots, on a cluster only keys of one slot (a script's keys must share one).
func TestWatchdogBatches(t *testing.T) {
	const holds = 2000
	script := lua.Load("rlock_renew.lua")
	slots := map[uint16]bool{}
	for i := 0; i < holds; i++ {
		slots[send.Slot("lock-"+strconv.Itoa(i))] = true
	}
	for _, c := range []struct {
		name    string
		cluster bool
		want    int
	}{
		{"single server", false, (holds + maxBatch - 1) / maxBatch},
		{"cluster", true, len(slots)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			batches := map[string]int{} // first key -> keys in the call
			exec := func(_ context.Context, s *lua.Script, keys, args []string, _ bool, _ time.Duration) rueidis.RedisResult {
				mu.Lock()
				defer mu.Unlock()
				batches[keys[0]] = len(keys) // a failed call is re-sent: count each batch once
				if c.cluster {
					for _, k := range keys {
						if send.Slot(k) != send.Slot(keys[0]) {
							t.Errorf("one renewal call spans slots %d and %d", send.Slot(keys[0]), send.Slot(k))
						}
					}
				}
				if len(args) != 1+len(keys) {
					t.Errorf("%d args for %d keys, want the TTL and one per key", len(args), len(keys))
				}
				return rueidis.RedisResult{} // no reply: a failed renewal, which does not matter here
			}
			w := newWatchdog(exec, nil, time.Hour, c.cluster)
			defer w.close()
			for i := 0; i < holds; i++ {
				key := "lock-" + strconv.Itoa(i)
				e := w.add(nil, Renewal{Script: script, Keys: []string{key}, Args: []string{"owner"}}, lostFunc(func(error) {}), false)
				w.confirm(e, time.Now())
			}
			w.renew(context.Background(), false)
			renewed := 0
			for _, n := range batches {
				renewed += n
			}
			if len(batches) != c.want || renewed != holds {
				t.Fatalf("%d holds renewed in %d batches covering %d keys, want %d batches covering all", holds, len(batches), renewed, c.want)
			}
		})
	}
}
