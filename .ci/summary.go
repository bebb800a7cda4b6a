// Command summary reads `go test -json` on stdin and prints what a plain `go test` would: the output
// of the tests that failed and each package's ok/FAIL line. At the end it lists every failing test
// and counts the tests and subtests that passed and failed (a parent that failed only because a
// subtest did counts once, as that subtest); it exits 1 if any failed.
//
// With -counts FILE it also appends "passed failed" and the failing names to FILE, so that a script
// running several modules can print one total at the end.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Output     string
}

type key struct{ pkg, test string }

func main() {
	counts := flag.String("counts", "", "append the counts and failing names to this file")
	flag.Parse()

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()

	buffered := map[key][]string{} // the output of tests still running
	var failed []key               // test "" for a package that failed as a whole
	passed := 0
	fail := func(k key) {
		for _, line := range buffered[k] {
			if !strings.HasPrefix(line, "=== ") {
				out.WriteString(line)
			}
		}
		delete(buffered, k)
		failed = append(failed, k)
		out.Flush()
	}
	// A panic or a timeout ends the binary: the tests it was running never report.
	unfinished := func(pkg string) {
		for _, k := range sortedKeys(buffered, pkg) {
			fail(k)
		}
	}

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var e event
		if err := json.Unmarshal(in.Bytes(), &e); err != nil {
			out.WriteString(in.Text() + "\n") // not JSON: go vet or the go command itself speaking
			continue
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			out.WriteString(e.Output)
		case e.Action == "build-fail":
			failed = append(failed, key{e.ImportPath, ""})
		case e.Test == "" && e.Action == "output":
			if strings.HasPrefix(e.Output, "FAIL") {
				unfinished(e.Package)
			}
			if e.Output != "PASS\n" {
				out.WriteString(e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			unfinished(e.Package)
			// TestMain's own checks (goroutines left behind) fail a package whose tests all passed.
			if !slices.ContainsFunc(failed, func(f key) bool { return f.pkg == e.Package }) {
				failed = append(failed, k)
			}
		case e.Test == "":
		case e.Action == "output":
			buffered[k] = append(buffered[k], e.Output)
		case e.Action == "pass":
			delete(buffered, k)
			passed++
		case e.Action == "skip":
			delete(buffered, k)
		case e.Action == "fail":
			fail(k)
		}
		out.Flush()
	}

	// A parent fails with its subtests: name only the tests that failed of themselves.
	var leaves []string
	for _, f := range failed {
		if f.test == "" {
			leaves = append(leaves, f.pkg+" (the package failed: see its output)")
		} else if !slices.ContainsFunc(failed, func(g key) bool {
			return g.pkg == f.pkg && strings.HasPrefix(g.test, f.test+"/")
		}) {
			leaves = append(leaves, f.pkg+" "+f.test)
		}
	}
	if *counts != "" {
		f, err := os.OpenFile(*counts, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %d\n", passed, len(leaves))
			for _, l := range leaves {
				fmt.Fprintf(f, "FAILED %s\n", l)
			}
			f.Close()
		}
	}
	if len(failed) > 0 {
		os.Exit(1)
	}
}

func sortedKeys(m map[key][]string, pkg string) []key {
	var ks []key
	for k := range m {
		if k.pkg == pkg {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b key) int { return strings.Compare(a.test, b.test) })
	return ks
}
