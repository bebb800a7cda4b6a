// Command bench compares redisync with its peers on a redis-server it starts itself: the set of
// ../shared/design/BENCHMARKS.md (B1-B11), one table per benchmark, with every figure's ratio to the
// raw floor and to the best peer, measured in the same run with the libraries interleaved.
//
//	cd bench && go run . [-quick] [-json FILE] [-only B1,B4] [-rtt 0,200us,1ms]
//	cd bench && go run . -scripts    # what each lock script costs the server, driven raw
//	cd bench && go run . -calls      # the server's calls per acquisition through the library, by command
//	cd bench && go run . -handover   # what bounds the contended hand-over at loopback and 200 us
//
// -rtt runs every table once per round trip listed: 0 over loopback, the others through a delay
// proxy (delay_linux.go) whose delay is set so that a PING between the clients and Redis takes that
// long.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "delay-proxy" { // the delay proxy's own process
		os.Exit(proxyMain(os.Args[2], os.Args[3]))
	}
	quick := flag.Bool("quick", false, "short slices and fewer repetitions (under 2 minutes)")
	jsonPath := flag.String("json", "", "write every figure to `FILE` as JSON rows")
	only := flag.String("only", "", "comma-separated benchmark ids to run (default: all)")
	scripts := flag.Bool("scripts", false, "print what each lock script costs the server, driven raw, and exit")
	calls := flag.Bool("calls", false, "print the server's calls per acquisition through the library, by command, and exit")
	cpu := flag.Bool("cpu", false, "print the client's CPU per uncontended pair for redisync, the floor and two peers, and exit")
	handover := flag.Bool("handover", false, "print what bounds the contended hand-over and the burst after idle at loopback and 200 us: rlock against notify-driven floors, in round trips, with the CPU placed three ways, and exit")
	rtts := flag.String("rtt", "0", "comma-separated round trips between the clients and Redis, each a run of every table: `0,200us,1ms` (0: loopback, no proxy)")
	flag.Parse()
	if *scripts {
		if err := scriptCosts(os.Stdout, 2*time.Second, 5); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *calls {
		if err := serverCalls(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *cpu {
		if err := clientCPU(os.Stdout, 4000, 3); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *handover {
		if err := handoverMode(os.Stdout, *quick); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	targets, err := parseRTTs(*rtts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(benchmain(*quick, *jsonPath, *only, targets))
}

// parseRTTs reads -rtt: durations, "0" for loopback.
func parseRTTs(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("-rtt: %q is not a round trip (0, 200us, 1ms)", f)
		}
		out = append(out, d)
	}
	return out, nil
}

// cleanup holds what must be stopped however the run ends.
var cleanup struct {
	fns []func()
}

func atExit(fn func()) { cleanup.fns = append(cleanup.fns, fn) }

func runCleanup() {
	for i := len(cleanup.fns) - 1; i >= 0; i-- {
		cleanup.fns[i]()
	}
	cleanup.fns = nil
}

// stopServersOnInterrupt runs the cleanups (the servers' shutdowns) when the run is interrupted, so
// that no redis-server outlives it.
func stopServersOnInterrupt() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "interrupted: stopping servers")
		runCleanup()
		os.Exit(2)
	}()
}

func benchmain(quick bool, jsonPath, only string, targets []time.Duration) int {
	began := time.Now()
	stopServersOnInterrupt()
	defer runCleanup()

	srv, err := redistest.NewServer(redistest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	atExit(func() { srv.Close() })
	r := &run{quick: quick, dep: standalone(srv), reps: 5, slice: 2 * time.Second}
	if quick {
		r.reps, r.slice = 2, 300*time.Millisecond
	}
	m := describe(srv)
	if r.rtt, err = roundTrip(r.dep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m.RTT = us(r.rtt)
	mode := "full"
	if quick {
		mode = "quick"
	}
	delayed := slices.ContainsFunc(targets, func(d time.Duration) bool { return d > 0 })
	if delayed {
		if m.ProxyRTT, err = proxyRoundTrip(r.dep); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Printf("redisync benchmarks (%s run: %d interleaved slices of %v per library)\n%s\n", mode, r.reps, r.slice, m)
	if delayed {
		fmt.Printf("delay proxy: a round trip through it at 0 delay (PING p50) %.0f us against %.0f us direct: %+.0f us of its own, which its delay is set to make up for\n",
			m.ProxyRTT, m.RTT, m.ProxyRTT-m.RTT)
	}
	fmt.Println("libraries, configured as their users configure them:")
	for _, l := range append(slices.Clone(libs), variants...) {
		fmt.Printf("  %-13s %s\n", l.name, l.config)
	}

	want := func(id string) bool {
		if only == "" {
			return true
		}
		return slices.Contains(strings.Split(strings.ToUpper(only), ","), id)
	}
	var tables []*table
	emit := func(ts ...*table) {
		for _, t := range ts {
			if r.target > 0 {
				if t.params == nil {
					t.params = map[string]any{}
				}
				t.params["target_rtt_us"] = r.target.Microseconds()
			}
			t.print(os.Stdout)
			tables = append(tables, t)
		}
	}
	sort.Slice(extraBenchmarks, func(i, j int) bool { return benchOrder(extraBenchmarks[i].id) < benchOrder(extraBenchmarks[j].id) })
	direct := r.dep
	for _, target := range targets {
		r.target = target
		if target > 0 {
			if err := r.calibrate(direct, time.Duration(m.ProxyRTT*float64(time.Microsecond))); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		if r.dep, err = r.via(direct); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if delayed {
			if r.rtt, err = roundTrip(r.dep); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			how := "directly, over loopback"
			if target > 0 {
				how = fmt.Sprintf("through the delay proxy, which holds every byte %v each way", r.oneWay.Round(time.Microsecond))
			}
			fmt.Printf("\n=== round trip %v: the clients reach Redis %s; PING p50 %.0f us ===\n", target, how, us(r.rtt))
		}
		var b1 *table
		if want("B1") {
			b1 = r.b1()
			emit(b1)
		}
		if want("B2") {
			emit(r.b2(b1))
		}
		if want("B3") {
			emit(r.b3("B3", r.dep))
		}
		if want("B4") {
			sizes := []time.Duration{0, 100 * time.Microsecond, time.Millisecond}
			emit(r.contention("B4", "8 separate clients, one key", r.dep, contenders(), 8, sizes, r.b4checks)...)
		}
		for _, b := range extraBenchmarks {
			if want(b.id) {
				emit(b.run(r)...)
			}
		}
		r.closeProxies()
	}
	r.dep = direct

	fmt.Printf("\nload average at the end: %s; wall time %v\n", loadAvg(), time.Since(began).Round(time.Second))
	var missed []string
	for _, t := range tables {
		for _, c := range t.checks {
			if !c.ok {
				missed = append(missed, fmt.Sprintf("%s %s: %s", t.id, c.target, c.got))
			}
		}
	}
	if len(missed) > 0 && delayed {
		fmt.Println("(the JSON rows of a table run through the delay proxy carry its target_rtt_us)")
	}
	if len(missed) > 0 {
		fmt.Printf("targets missed (%d):\n  %s\n", len(missed), strings.Join(missed, "\n  "))
	} else {
		fmt.Println("every target checked in this run was met")
	}
	if jsonPath != "" {
		if err := writeJSON(jsonPath, m, tables); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if len(r.broken) > 0 {
		fmt.Fprintf(os.Stderr, "\nFAIL: mutual exclusion broken:\n  %s\n", strings.Join(r.broken, "\n  "))
		return 1
	}
	return 0
}

// contenders are the libraries that wait for a held lock (everything but the floor), and
// redisync's variants.
func contenders() []*lib {
	var out []*lib
	for _, l := range libs {
		if !l.floor {
			out = append(out, l)
		}
	}
	return append(out, variants...)
}

// benchOrder sorts "B5" before "B10".
func benchOrder(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "B"))
	return n
}

// extraBenchmarks are the benchmarks beyond B1-B4, in the order they run.
var extraBenchmarks []struct {
	id  string
	run func(r *run) []*table
}
