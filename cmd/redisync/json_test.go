package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/semaphore"
)

// TestJSONEverywhere: every subcommand that prints a value prints it as JSON with --json, and
// nothing else on stdout.
func TestJSONEverywhere(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	ctx := context.Background()
	c := tg.Client(t)
	must(must(countdown.New(c, "json-latch")).TrySetCount(ctx, 2))
	must(must(semaphore.NewExpirable(c, "json-sem")).TrySetPermits(ctx, 2))
	must(must(ratelimit.New(c, "json-rate")).TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: time.Second}))
	for _, tc := range []struct {
		args []string
		want map[string]any // fields it must have, with these values (nil: any)
	}{
		{[]string{"latch", "json-latch", "count", "--json"}, map[string]any{"name": "json-latch", "count": 2.0}},
		{[]string{"semaphore", "--update", "--permits", "3", "--json", "json-sem"}, map[string]any{"name": "json-sem", "permits": 3.0, "available": 3.0, "acquired": 0.0}},
		{[]string{"rate", "--update", "--rate", "5/s", "--json", "json-rate"}, map[string]any{"name": "json-rate", "rate": 5.0, "interval_ms": 1000.0, "type": "overall", "available": nil}},
		{[]string{"unlock", "--force", "--json", "json-free"}, map[string]any{"name": "json-free", "kind": "none", "was_held": false}},
		{[]string{"inspect", "--json", "json-latch"}, map[string]any{"name": "json-latch", "count": 2.0}},
		{[]string{"demo", "--json", "--buyers", "4", "--stock", "2"}, map[string]any{"stock": 2.0, "buyers": 4.0, "with_rlock": nil, "without_lock": nil}},
		{[]string{"version", "--json"}, map[string]any{"version": nil}},
	} {
		p := tool(t, tg.Addrs[0], tc.args...)
		var got map[string]any
		if code := p.run(); code != 0 || json.Unmarshal(p.stdout.Bytes(), &got) != nil {
			t.Errorf("%v", p)
			continue
		}
		for k, v := range tc.want {
			if g, ok := got[k]; !ok || (v != nil && g != v) {
				t.Errorf("%q: %s = %v, want %v\n%s", tc.args, k, g, v, p.stdout.String())
			}
		}
	}
	p := tool(t, tg.Addrs[0], "list", "--json", "json-*")
	var rows []listed
	if code := p.run(); code != 0 || json.Unmarshal(p.stdout.Bytes(), &rows) != nil {
		t.Errorf("%v", p)
	}
}
