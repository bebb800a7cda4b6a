package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
	d, err := r.viaCluster(c)
	if err != nil {
		t := newTable("B11", "3-master cluster", nil)
		t.note("could not put the delay proxy in front of the cluster: %v", err)
		return []*table{t}
	}
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

// viaCluster returns c as this round's clients reach it (see via): through a delay proxy per master,
// whose port every master then announces (CONFIG SET cluster-announce-port), so that CLUSTER SLOTS
// and MOVED redirects lead the clients through the proxies too. It returns once every master's slot
// map names the proxies.
func (r *run) viaCluster(c *redistest.Cluster) (*deployment, error) {
	d := clusterDeployment(c)
	if r.target <= 0 {
		return d, nil
	}
	d.addrs = nil
	var ports []string
	for _, m := range c.Masters {
		p, err := startDelayProxy(m.Addr, r.oneWay)
		if err != nil {
			return nil, err
		}
		r.proxies = append(r.proxies, p)
		d.addrs = append(d.addrs, p.Addr())
		_, port, _ := strings.Cut(p.Addr(), ":")
		ports = append(ports, port)
		for _, kv := range [][2]string{{"cluster-announce-bus-port", strconv.Itoa(m.Port + 10000)}, {"cluster-announce-port", port}} {
			if _, err := m.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, m := range c.Masters {
		for {
			out, err := m.DoContext(ctx, "CLUSTER", "SLOTS")
			if err != nil {
				return nil, err
			}
			seen := 0
			for _, port := range ports {
				if strings.Contains(out, "\n"+port+"\n") || strings.HasSuffix(out, "\n"+port) {
					seen++
				}
			}
			if seen == len(ports) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%s still announces %q", m.Addr, out)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return d, nil
}
