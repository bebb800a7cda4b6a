package main

import (
	"math"
	"testing"
)

func TestSplitHandovers(t *testing.T) {
	rels := []release{
		{seq: 1, t0: 100, t1: 300, send: 110, rply: 290},
		{seq: 2, t0: 1000, t1: 1200, send: 0, rply: 0},       // its script's stamps not seen
		{seq: 3, t0: 2000, t1: 2300, send: 2010, rply: 2250}, // its waiter took the lock without a message
	}
	grants := []grant{
		{seq: 1, t2: 250, t3: 260},
		{seq: 2, t2: 1100, t3: 1150},
		{seq: 3, t2: 1500, t3: 2400},
		{seq: 9, t2: 1, t3: 2}, // after a release of no record: left out
	}
	got := splitHandovers(rels, grants)
	want := []handSplit{
		{total: 160, pre: 10, script: 180, push: 140, wake: 10, sent: true, stamped: true},
		{total: 150},
		{total: 400, pre: 10, script: 240, sent: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d hand-overs, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hand-over %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	s := summarize(got)
	if s.n != 3 || s.total != 160 || s.pre != 10 || s.push != 140 || s.wake != 10 || math.Abs(s.stampedShare-1.0/3) > 1e-9 {
		t.Errorf("summary %+v", s)
	}
	if s := summarize(nil); s.n != 0 || s.total != 0 || s.stampedShare != 0 {
		t.Errorf("summary of nothing %+v", s)
	}
}

func TestMedianAndSpread(t *testing.T) {
	xs := []float64{3, 1, 2}
	if got := median(xs); got != 2 {
		t.Errorf("median(3,1,2) = %v", got)
	}
	if xs[0] != 3 {
		t.Errorf("median sorted its argument: %v", xs)
	}
	if got := median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("median(4,1,2,3) = %v", got)
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median of nothing = %v", got)
	}
	if got := spread([]float64{2, 1.5, 4}); got != "2.00 [1.50-4.00]" {
		t.Errorf("spread = %q", got)
	}
	if got := spread(nil); got != "-" {
		t.Errorf("spread of nothing = %q", got)
	}
}
