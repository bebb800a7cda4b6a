package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// --prefix maps every NAME as a Redisson NameMapper that prepends it: the latch of tenant t1 is the
// key "t1:jobs", list --prefix shows that tenant's objects alone, and inspect reads the mapped key.
func TestPrefix(t *testing.T) {
	tg := testkit.Standalone(t)
	addr := tg.Addrs[0]
	rdb := tg.Redis(t)
	for _, tenant := range []string{"pfx-t1:", "pfx-t2:"} {
		if p := tool(t, addr, "latch", "--prefix", tenant, "jobs", "set", "3"); p.run() != 0 {
			t.Fatalf("%v", p)
		}
		t.Cleanup(func() { testkit.Do(t, rdb, "DEL", tenant+"jobs") })
	}
	if v := testkit.DoString(t, rdb, "GET", "pfx-t1:jobs"); v != "3" {
		t.Fatalf("key pfx-t1:jobs holds %q, want 3", v)
	}
	for _, tenant := range []string{"pfx-t1:", "pfx-t2:"} {
		c := tg.Client(t, redisync.WithNameMapper(func(name string) string { return tenant + name }))
		l := must(rlock.New(c, "orders"))
		held := must(l.Lock(context.Background()))
		t.Cleanup(func() { l.Unlock(held) })
	}
	found := listJSON(t, addr, "--prefix", "pfx-t1:")
	if _, ok := found["pfx-t1:orders"]; !ok || len(found) != 1 {
		t.Fatalf("list --prefix pfx-t1: found %v, want pfx-t1:orders alone", found)
	}
	p := tool(t, addr, "inspect", "--json", "--prefix", "pfx-t1:", "jobs")
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	var st state
	if err := json.Unmarshal(p.stdout.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Name != "pfx-t1:jobs" || st.Count == nil || *st.Count != 3 {
		t.Fatalf("inspect --prefix pfx-t1: jobs: %+v", st)
	}
}
