package rwlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rwlock"
)

// A writer that also reads (downgrade), re-entering both, leaves nothing in Redis once it has
// released them all, the read hold last (the conformance suite checks each side alone): a last
// release writes no unlock latch, and the latch of a release that leaves holds is deleted once
// answered.
func TestDowngradeLeavesNothing(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t)
	ctx := context.Background()
	for i := range 20 {
		rw, err := rwlock.New(c, "leave:"+strconv.Itoa(i%4))
		if err != nil {
			t.Fatal(err)
		}
		w, r := rw.WriteLock(), rw.ReadLock()
		outer, err := w.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := w.Lock(outer)
		if err != nil {
			t.Fatal(err)
		}
		read1, err := r.Lock(inner) // the writer reads too
		if err != nil {
			t.Fatal(err)
		}
		read2, err := r.Lock(read1)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			l   *rwlock.Lock
			ctx context.Context
		}{{r, read2}, {w, inner}, {w, outer}, {r, read1}} { // the last read hold after a downgrade
			if err := step.l.Unlock(step.ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Well within the latch's TTL (10 s): only the deletes can empty the server this soon.
	testkit.Eventually(t, 5*time.Second, func() error {
		size, err := tg.Servers[0].Do("DBSIZE")
		if err != nil || strings.TrimSpace(size) != "0" {
			keys, _ := tg.Servers[0].Do("KEYS", "*")
			return fmt.Errorf("%s keys left (%v): %s", size, err, keys)
		}
		return nil
	})
}
