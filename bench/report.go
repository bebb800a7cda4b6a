package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// A metric is one column of a table.
type metric struct {
	name   string // in JSON rows
	head   string // column header
	higher bool   // higher is better (rates); otherwise lower is (latencies, commands)
	ratio  bool   // print redisync's ratio to the floor and to the best peer
}

// A table is one benchmark's figures: one row per library.
type table struct {
	id, title string
	params    map[string]any
	metrics   []metric
	libs      []string
	vals      map[string]map[string]float64 // lib -> metric -> value (NaN: not applicable)
	notes     []string
	checks    []check
	noRatios  bool // the rows are not peers of one another (B2 compares redisync with its own B1)
}

// A check is one target of BENCHMARKS.md, judged on this run's figures.
type check struct {
	target string
	got    string
	ok     bool
}

func newTable(id, title string, params map[string]any, metrics ...metric) *table {
	return &table{id: id, title: title, params: params, metrics: metrics, vals: map[string]map[string]float64{}}
}

func (t *table) set(lib, metric string, v float64) {
	if t.vals[lib] == nil {
		t.vals[lib] = map[string]float64{}
		t.libs = append(t.libs, lib)
	}
	t.vals[lib][metric] = v
}

func (t *table) get(lib, metric string) float64 {
	if v, ok := t.vals[lib][metric]; ok {
		return v
	}
	return math.NaN()
}

func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func (t *table) expect(ok bool, target, format string, args ...any) {
	t.checks = append(t.checks, check{target: target, got: fmt.Sprintf(format, args...), ok: ok})
}

// best returns the peer with the best value of m, and that value.
func (t *table) best(m metric) (string, float64) {
	name, best := "", math.NaN()
	for _, lib := range t.libs {
		if variant(lib) || lib == "floor" {
			continue
		}
		v := t.get(lib, m.name)
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(best) || (m.higher && v > best) || (!m.higher && v < best) {
			name, best = lib, v
		}
	}
	return name, best
}

// ratio returns redisync's value of m divided by v.
func (t *table) ratio(m metric, v float64) float64 { return t.get("redisync", m.name) / v }

func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "-"
	case a >= 100000:
		return fmt.Sprintf("%.0fk", v/1000)
	case a >= 10000:
		return fmt.Sprintf("%.1fk", v/1000)
	case a >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s  %s\n", t.id, t.title)
	if len(t.params) > 0 {
		var ps []string
		for k, v := range t.params {
			ps = append(ps, fmt.Sprintf("%s=%v", k, v))
		}
		sort.Strings(ps)
		fmt.Fprintf(w, "    %s\n", strings.Join(ps, " "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "lib\t")
	for _, m := range t.metrics {
		fmt.Fprintf(tw, "%s\t", m.head)
	}
	fmt.Fprintln(tw)
	for _, lib := range t.libs {
		fmt.Fprintf(tw, "%s\t", lib)
		for _, m := range t.metrics {
			fmt.Fprintf(tw, "%s\t", num(t.get(lib, m.name)))
		}
		fmt.Fprintln(tw)
	}
	if _, ok := t.vals["redisync"]; ok && !t.noRatios {
		if _, ok := t.vals["floor"]; ok {
			fmt.Fprint(tw, "redisync/floor\t")
			for _, m := range t.metrics {
				if m.ratio {
					fmt.Fprintf(tw, "%sx\t", num(t.ratio(m, t.get("floor", m.name))))
				} else {
					fmt.Fprint(tw, "\t")
				}
			}
			fmt.Fprintln(tw)
		}
		peers := false
		for _, m := range t.metrics {
			if name, _ := t.best(m); m.ratio && name != "" {
				peers = true
			}
		}
		if peers {
			fmt.Fprint(tw, "redisync/best peer\t")
		}
		for _, m := range t.metrics {
			if !peers {
				break
			}
			if name, v := t.best(m); m.ratio && name != "" {
				fmt.Fprintf(tw, "%sx %s\t", num(t.ratio(m, v)), name)
			} else {
				fmt.Fprint(tw, "\t")
			}
		}
		if peers {
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
	for _, n := range t.notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
	for _, c := range t.checks {
		mark := "ok  "
		if !c.ok {
			mark = "MISS"
		}
		fmt.Fprintf(w, "    %s %s: %s\n", mark, c.target, c.got)
	}
}

// A row is one figure in the -json file.
type row struct {
	Bench  string         `json:"bench"`
	Lib    string         `json:"lib"`
	Metric string         `json:"metric"`
	Value  float64        `json:"value"`
	Params map[string]any `json:"params,omitempty"`
}

func writeJSON(path string, m machine, tables []*table) error {
	var rows []row
	env := map[string]any{"cpu": m.CPU, "cores": m.Cores, "gomaxprocs": m.GOMAXPROCS, "go": m.Go, "redis": m.Redis, "load_avg": m.Load, "start": m.Start, "tree": m.Tree}
	if m.ProxyRTT > 0 {
		env["proxy_rtt_p50_us"] = m.ProxyRTT
	}
	rows = append(rows, row{Bench: "env", Metric: "rtt_p50_us", Value: m.RTT, Params: env})
	for _, t := range tables {
		for _, lib := range t.libs {
			for _, mt := range t.metrics {
				v := t.get(lib, mt.name)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				rows = append(rows, row{Bench: t.id, Lib: lib, Metric: mt.name, Value: math.Round(v*1000) / 1000, Params: t.params})
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "[")
	for i, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			f.Close()
			return err
		}
		sep := ","
		if i == len(rows)-1 {
			sep = ""
		}
		fmt.Fprintf(f, "%s%s\n", b, sep)
	}
	fmt.Fprintln(f, "]")
	return f.Close()
}

// --- small statistics ---

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// jain is Jain's fairness index of xs: 1 when all are equal, 1/n when one takes everything.
func jain(xs []int64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * sq)
}
