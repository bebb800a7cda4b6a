package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i))
	}
	sortDurations(d)
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{.5, 50}, {.99, 99}, {1, 100}, {0, 1}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, .5); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

func TestJain(t *testing.T) {
	if got := jain([]int64{5, 5, 5, 5}); got != 1 {
		t.Errorf("equal shares: %v, want 1", got)
	}
	if got := jain([]int64{8, 0, 0, 0}); got != 0.25 {
		t.Errorf("one takes all of 4: %v, want 0.25", got)
	}
	if got := jain([]int64{0, 0}); !math.IsNaN(got) {
		t.Errorf("nothing acquired: %v, want NaN", got)
	}
}

func TestSectionCountsOverlaps(t *testing.T) {
	var s section
	s.enter()
	s.leave()
	s.enter()
	s.enter() // a second holder inside
	s.leave()
	s.leave()
	if n := s.overlaps.Load(); n != 1 {
		t.Fatalf("overlaps = %d, want 1", n)
	}
}

type stamped struct{ q *queueStamp }

func (s stamped) Lock(context.Context, string) (func(context.Context) error, error) { return nil, nil }
func (s stamped) Close()                                                            {}
func (s stamped) queue() *queueStamp                                                { return s.q }

func TestFIFOCheck(t *testing.T) {
	lockers := []locker{stamped{&queueStamp{}}, stamped{&queueStamp{}}, stamped{&queueStamp{}}}
	f := newFIFOCheck(lockers)
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	f.start(0, at(0))
	f.stamps[0].returned(at(1)) // 0 is queued
	f.start(1, at(10))
	f.stamps[1].returned(at(11))
	f.granted(0, true) // the oldest goes first
	f.start(2, at(20))
	f.stamps[2].returned(at(21))
	f.granted(2, true) // 1 was queued before 2 started
	f.granted(1, true)
	if f.violations != 1 {
		t.Fatalf("violations = %d, want 1", f.violations)
	}

	// A contender that started first but whose first try had not returned when another started is
	// not ahead of it: the server may have queued it second.
	f.start(0, at(30))
	f.start(1, at(31))
	f.stamps[1].returned(at(32))
	f.stamps[0].returned(at(33))
	f.granted(1, true)
	f.granted(0, true)
	if f.violations != 1 {
		t.Fatalf("violations = %d after a late first try, want still 1", f.violations)
	}

	if newFIFOCheck([]locker{stamped{&queueStamp{}}, nil}) != nil {
		t.Fatal("a check over a contender that cannot stamp its tries")
	}
	var none *fifoCheck // contenders without a FIFO check pass nil
	none.start(0, t0)
	none.granted(0, true)
}

func TestTableChecksAndJSON(t *testing.T) {
	tb := newTable("B1", "test", map[string]any{"deployment": "standalone"}, mPairs, mP50)
	tb.set("floor", mPairs.name, 1000)
	tb.set("redisync", mPairs.name, 950)
	tb.set("bsm", mPairs.name, 900)
	tb.set("redsync", mPairs.name, 990)
	tb.set("redsync", mP50.name, 40)
	tb.set("bsm", mP50.name, 30)
	if name, v := tb.best(mPairs); name != "redsync" || v != 990 {
		t.Errorf("best peer by pairs/s = %s %v, want redsync 990", name, v)
	}
	if name, v := tb.best(mP50); name != "bsm" || v != 30 {
		t.Errorf("best peer by p50 = %s %v, want bsm 30 (lower is better)", name, v)
	}
	var out strings.Builder
	tb.print(&out)
	if !strings.Contains(out.String(), "redisync/floor") || !strings.Contains(out.String(), "0.950x") {
		t.Errorf("table without redisync's ratio to the floor:\n%s", out.String())
	}

	path := filepath.Join(t.TempDir(), "out.json")
	if err := writeJSON(path, machine{Redis: "7.0.15", RTT: 50}, []*table{tb}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	var found bool
	for _, r := range rows {
		if r.Bench == "B1" && r.Lib == "redisync" && r.Metric == "pairs_per_s" && r.Value == 950 && r.Params["deployment"] == "standalone" {
			found = true
		}
		if math.IsNaN(r.Value) {
			t.Errorf("NaN written: %+v", r)
		}
	}
	if !found || rows[0].Bench != "env" {
		t.Errorf("rows = %+v", rows)
	}
}
