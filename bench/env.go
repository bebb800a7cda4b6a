package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/redistest"
)

// A deployment is the Redis a benchmark runs against: one server, or the masters of a cluster.
type deployment struct {
	name    string
	cluster bool
	addrs   []string
	servers []*redistest.Server
}

func standalone(s *redistest.Server) *deployment {
	return &deployment{name: "standalone", addrs: []string{s.Addr}, servers: []*redistest.Server{s}}
}

func clusterDeployment(c *redistest.Cluster) *deployment {
	return &deployment{name: "cluster", cluster: true, addrs: c.Addrs, servers: c.Masters}
}

// serverStats sums INFO counters over the deployment's servers: every command call (script calls
// included) and the CPU time the servers used, and what they hold: keys and used_memory.
type serverStats struct {
	calls int64
	cpu   time.Duration
	byCmd map[string]int64 // calls per command name
	keys  int64            // keys in every db
	mem   int64            // used_memory, bytes
}

func (d *deployment) stats() (serverStats, error) {
	st := serverStats{byCmd: map[string]int64{}}
	for _, s := range d.servers {
		out, err := s.Do("INFO", "all")
		if err != nil {
			return st, err
		}
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
				_, v, _ := strings.Cut(rest, ":calls=")
				v, _, _ = strings.Cut(v, ",")
				n, _ := strconv.ParseInt(v, 10, 64)
				st.calls += n
				name, _, _ := strings.Cut(rest, ":")
				st.byCmd[name] += n
			}
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				st.mem += n
			}
			if strings.HasPrefix(line, "db") {
				if _, v, ok := strings.Cut(line, ":keys="); ok {
					v, _, _ = strings.Cut(v, ",")
					n, _ := strconv.ParseInt(v, 10, 64)
					st.keys += n
				}
			}
			for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
				if v, ok := strings.CutPrefix(line, f); ok {
					x, _ := strconv.ParseFloat(v, 64)
					st.cpu += time.Duration(x * float64(time.Second))
				}
			}
		}
		st.calls-- // this INFO
	}
	return st, nil
}

// machine describes where the figures were taken.
type machine struct {
	CPU        string  `json:"cpu"`
	Cores      int     `json:"cores"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	Go         string  `json:"go"`
	Redis      string  `json:"redis"`
	Load       string  `json:"load_avg"`
	RTT        float64 `json:"rtt_p50_us"`
	ProxyRTT   float64 `json:"proxy_rtt_p50_us,omitempty"` // through the delay proxy at 0 delay
	Tree       string  `json:"tree"`
	Start      string  `json:"start"`
}

func describe(s *redistest.Server) machine {
	m := machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go:         runtime.Version(),
		Load:       loadAvg(),
		Start:      time.Now().UTC().Format(time.RFC3339),
		Tree:       tree(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := s.Do("INFO", "server"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				m.Redis = v
			}
		}
	}
	return m
}

// tree names the library's commit and how many files differ from it, since the run measures the
// working tree the module's replace directive points at.
func tree() string {
	head, err := exec.Command("git", "-C", "..", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	out := strings.TrimSpace(string(head))
	if st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		if n := len(strings.Fields(strings.TrimSpace(string(st)))) / 2; n > 0 {
			out += fmt.Sprintf(" + %d modified files", n)
		}
	}
	return out
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// proxyRoundTrip measures a serial PING's p50 through a delay proxy that adds nothing: the proxy's
// own cost, in us.
func proxyRoundTrip(d *deployment) (float64, error) {
	if d.cluster || len(d.addrs) != 1 {
		return 0, fmt.Errorf("the proxy's own cost is measured on a single server")
	}
	p, err := startDelayProxy(d.addrs[0], 0)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	via := *d
	via.addrs = []string{p.Addr()}
	rtt, err := roundTrip(&via)
	return us(rtt), err
}

// roundTrip measures the p50 of a serial PING: the unit in which handoffs are judged.
func roundTrip(d *deployment) (time.Duration, error) {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs, DisableCache: true})
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	ctx := context.Background()
	var lat []time.Duration
	for i := 0; i < 2000; i++ {
		t := time.Now()
		if err := rdb.Do(ctx, rdb.B().Ping().Build()).Error(); err != nil {
			return 0, err
		}
		if i >= 200 {
			lat = append(lat, time.Since(t))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], nil
}

func (m machine) String() string {
	return fmt.Sprintf("machine: %s, %d cores, GOMAXPROCS %d, %s; redis %s; load average %s; round trip (PING p50) %.0f us; library at %s",
		m.CPU, m.Cores, m.GOMAXPROCS, m.Go, m.Redis, m.Load, m.RTT, m.Tree)
}
