// Command bench compares redisync with its peers on a redis-server it starts itself: the set of
// ../shared/design/BENCHMARKS.md (B1-B11), one table per benchmark, with every figure's ratio to the
// raw floor and to the best peer, measured in the same run with the libraries interleaved.
//
//	cd bench && go run . [-quick] [-json FILE] [-only B1,B4]
//	cd bench && go run . -scripts    # what each lock script costs the server, driven raw
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
	quick := flag.Bool("quick", false, "short slices and fewer repetitions (under 2 minutes)")
	jsonPath := flag.String("json", "", "write every figure to `FILE` as JSON rows")
	only := flag.String("only", "", "comma-separated benchmark ids to run (default: all)")
	scripts := flag.Bool("scripts", false, "print what each lock script costs the server, driven raw, and exit")
	flag.Parse()
	if *scripts {
		if err := scriptCosts(os.Stdout, 2*time.Second, 5); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(benchmain(*quick, *jsonPath, *only))
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

func benchmain(quick bool, jsonPath, only string) int {
	began := time.Now()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "interrupted: stopping servers")
		runCleanup()
		os.Exit(2)
	}()
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
	fmt.Printf("redisync benchmarks (%s run: %d interleaved slices of %v per library)\n%s\n", mode, r.reps, r.slice, m)
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
			t.print(os.Stdout)
			tables = append(tables, t)
		}
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
	sort.Slice(extraBenchmarks, func(i, j int) bool { return benchOrder(extraBenchmarks[i].id) < benchOrder(extraBenchmarks[j].id) })
	for _, b := range extraBenchmarks {
		if want(b.id) {
			emit(b.run(r)...)
		}
	}

	fmt.Printf("\nload average at the end: %s; wall time %v\n", loadAvg(), time.Since(began).Round(time.Second))
	var missed []string
	for _, t := range tables {
		for _, c := range t.checks {
			if !c.ok {
				missed = append(missed, fmt.Sprintf("%s %s: %s", t.id, c.target, c.got))
			}
		}
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
