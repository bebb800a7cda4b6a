package core_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

// A client lists itself again only once the last listing of that record is older than the period,
// and a late note of an older listing does not hide a newer one.
func TestListAgain(t *testing.T) {
	_, c := testkit.Mini(t)
	cc := core.Of(c)
	const every = time.Hour
	if !cc.ListAgain("clients:{a}", every) {
		t.Fatal("never listed: must list")
	}
	now := time.Now()
	cc.Listed("clients:{a}", now, every)
	if cc.ListAgain("clients:{a}", every) {
		t.Error("listed just now: must not list again")
	}
	if !cc.ListAgain("clients:{b}", every) {
		t.Error("another record: must list")
	}
	cc.Listed("clients:{a}", now.Add(-2*every), every) // an older try's answer, late
	if cc.ListAgain("clients:{a}", every) {
		t.Error("an older listing replaced a newer one")
	}
	cc.Listed("clients:{c}", now.Add(-2*every), every)
	if !cc.ListAgain("clients:{c}", every) {
		t.Error("listed longer ago than the period: must list again")
	}
}
