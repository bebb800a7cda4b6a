package send

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"
)

// Deletes queued with DeleteLater reach the server without anyone waiting for them, the last ones
// while the Sender closes, and no goroutine is left behind.
func TestDeleteLater(t *testing.T) {
	defer goleak.VerifyNone(t)
	m, err := miniredis.Run()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	c := New(rdb, true, "test", 0, 0)
	for _, f := range []string{"a", "b", "c", "d"} {
		m.HSet("grants", f, "1")
	}
	m.HSet("other", "x", "1")
	m.Set("latch", "1")
	c.DeleteLater("latch")
	c.DeleteLater("grants", "a")
	c.DeleteLater("grants", "b")
	c.DeleteLater("other", "x")
	deadline := time.Now().Add(5 * time.Second)
	fields := func() []string { f, _ := m.HKeys("grants"); return f }
	for m.Exists("other") || m.Exists("latch") || len(fields()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("grants %v, other exists %v, latch exists %v: the deletes did not arrive", fields(), m.Exists("other"), m.Exists("latch"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.DeleteLater("grants", "c")
	c.Shut()
	c.Drain() // sends what is queued
	if got := fields(); len(got) != 1 || got[0] != "d" {
		t.Fatalf("after Close the grants hold %v, want [d]", got)
	}
	c.DeleteLater("grants", "d") // after Close: nothing, and no goroutine
	if got := fields(); len(got) != 1 {
		t.Fatalf("a delete after Close reached the server: %v", got)
	}
}
