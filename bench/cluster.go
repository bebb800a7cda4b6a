package main

import (
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

func init() {
	extraBenchmarks = append(extraBenchmarks, struct {
		id  string
		run func(r *run) []*table
	}{"B11", (*run).b11})
}

// B11: B3 and B4 on a 3-master cluster (sharded Pub/Sub for redisync on Redis 7).
func (r *run) b11() []*table {
	c, err := redistest.NewCluster(3, 0)
	if err != nil {
		t := newTable("B11", "3-master cluster", nil)
		t.note("could not start the cluster: %v", err)
		return []*table{t}
	}
	atExit(func() { c.Close() })
	defer c.Close()
	d := clusterDeployment(c)
	sizes := []time.Duration{0, time.Millisecond}
	if r.quick {
		sizes = []time.Duration{100 * time.Microsecond}
	}
	// Three slices per library instead of five keep the full run under 15 minutes.
	cr := *r
	cr.reps = min(r.reps, 3)
	defer func() { r.broken = cr.broken }()
	out := []*table{cr.b3("B11/B3", d)}
	return append(out, cr.contention("B11/B4", "8 separate clients, one key, on the cluster", d, contenders(), 8, sizes, r.b4checks)...)
}
