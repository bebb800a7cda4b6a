package fairlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
)

// Released fair locks leave nothing in Redis: a last release writes no unlock latch, and the latch
// of a release that leaves holds is deleted once answered.
func TestReleaseLeavesNothing(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t)
	ctx := context.Background()
	for i := range 40 {
		l, err := fairlock.New(c, "leave:"+strconv.Itoa(i%4))
		if err != nil {
			t.Fatal(err)
		}
		outer, err := l.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := l.Lock(outer)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(inner); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(outer); err != nil {
			t.Fatal(err)
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
