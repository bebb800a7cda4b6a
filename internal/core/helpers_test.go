package core

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redisync/redisync/internal/minitest"
)

// newMini returns a Client on an embedded server (testkit.Mini cannot be used here: it imports this
// package).
func newMini(t *testing.T) *Client {
	t.Helper()
	_, c := newMiniServer(t)
	return c
}

// newMiniServer is newMini that returns the server too.
func newMiniServer(t *testing.T) (*miniredis.Miniredis, *Client) {
	t.Helper()
	m, rdb := minitest.Mini(t)
	e, err := New(rdb, true, Config{StallBound: 12 * time.Second}) // as package redisync gives rueidis's defaults
	if err != nil {
		t.Fatal(err)
	}
	c := e.c
	t.Cleanup(func() { c.Close() })
	return m, c
}

// A client lists itself again only once the last listing of that record is older than the period,
// and a late note of an older listing does not hide a newer one.
func TestListAgain(t *testing.T) {
	c := newMini(t)
	const every = time.Hour
	if !c.listAgain("clients:{a}", every) {
		t.Fatal("never listed: must list")
	}
	now := time.Now()
	c.listed("clients:{a}", now, every)
	if c.listAgain("clients:{a}", every) {
		t.Error("listed just now: must not list again")
	}
	if !c.listAgain("clients:{b}", every) {
		t.Error("another record: must list")
	}
	c.listed("clients:{a}", now.Add(-2*every), every) // an older try's answer, late
	if c.listAgain("clients:{a}", every) {
		t.Error("an older listing replaced a newer one")
	}
	c.listed("clients:{c}", now.Add(-2*every), every)
	if !c.listAgain("clients:{c}", every) {
		t.Error("listed longer ago than the period: must list again")
	}
}
