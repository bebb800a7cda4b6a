package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with what the tests get")

// golden compares got with the file testdata/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what the tool printed (-update rewrites it)\n--- want\n%s--- got\n%s", path, want, got)
	}
}

// The longest duration a view may show in these tests: anything longer is absurd (a score read
// as a time, a time read as a duration).
const longestShown = 2 * time.Hour

var (
	owners    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:[0-9]+)?`)
	permitIDs = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	durations = regexp.MustCompile(`-?\b(?:[0-9]+h)?(?:[0-9]+m)?[0-9]+(?:\.[0-9]+)?(?:ns|µs|ms|s)\b`)
	whos      = regexp.MustCompile(`pid [0-9]+ on \S+`)
)

// normalize replaces what changes from run to run in a view (client ids, owners, permit ids, the
// holder's pid and host) with names in order of appearance, and each duration with <d>, after
// checking that it is neither negative nor absurd.
func normalize(t *testing.T, view string) string {
	t.Helper()
	names := map[string]string{}
	name := func(prefix string) func(string) string {
		return func(s string) string {
			if n, ok := names[s]; ok {
				return n
			}
			n := 0
			for _, v := range names {
				if strings.HasPrefix(v, prefix) {
					n++
				}
			}
			names[s] = fmt.Sprintf("%s-%c", prefix, 'A'+n)
			return names[s]
		}
	}
	view = owners.ReplaceAllStringFunc(view, name("OWNER"))
	view = permitIDs.ReplaceAllStringFunc(view, name("PERMIT"))
	view = whos.ReplaceAllString(view, "pid PID on HOST")
	return durations.ReplaceAllStringFunc(view, func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > longestShown {
			t.Errorf("a view shows the duration %s, negative or absurd:\n%s", s, view)
		}
		return "<d>"
	})
}

// normalizeJSON is normalize for a JSON view: each "..._ms" number is checked (neither negative,
// but a TTL of -1 for no expiry, nor absurd) and replaced with "<ms>", and a holder's pid and host
// are replaced too.
func normalizeJSON(t *testing.T, view []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(view, &v); err != nil {
		t.Fatalf("%v: %s", err, view)
	}
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(k, e)
			}
			if key == "who" { // the holder's process
				x["pid"], x["host"] = "PID", "HOST"
			}
		case []any:
			for i, e := range x {
				x[i] = walk(key, e)
			}
		case float64:
			if strings.HasSuffix(key, "_ms") {
				if ms := time.Duration(x) * time.Millisecond; (ms < 0 && !(key == "ttl_ms" && x == -1)) || ms > longestShown {
					t.Errorf("%q: %v ms, negative or absurd:\n%s", key, x, view)
				}
				return "<ms>"
			}
		}
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(walk("", v))
	return normalize(t, b.String())
}

// normalizeTable is normalize for list's table, whose columns are as wide as their cells: the
// cells are joined with " | " instead.
func normalizeTable(t *testing.T, table string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		cells := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		b.WriteString(strings.Join(cells, " | ") + "\n")
	}
	return normalize(t, b.String())
}

// view is what the tool shows of one name: inspect's text and JSON, list's table and JSON row.
type view struct {
	st    *state
	row   *listed
	files map[string]string // by golden file suffix
}

// look runs inspect and list (text and JSON) on name, checks what every view must satisfy (a
// holder is never a waiter, waiter counts are those of the waiters shown, no negative or absurd
// durations), and returns the views normalized.
func look(t *testing.T, tg *testkit.Target, name string) view {
	t.Helper()
	addrs := strings.Join(tg.Addrs, ",")
	run := func(args ...string) string {
		t.Helper()
		p := tool(t, addrs, args...)
		if code := p.run(); code != 0 {
			t.Fatalf("%v", p)
		}
		return p.stdout.String()
	}
	v := view{st: new(state), files: map[string]string{}}
	rawJSON := run("inspect", "--json", name)
	if err := json.Unmarshal([]byte(rawJSON), v.st); err != nil {
		t.Fatalf("%v: %s", err, rawJSON)
	}
	v.files["inspect.txt"] = normalize(t, run("inspect", name))
	v.files["inspect.json"] = normalizeJSON(t, []byte(rawJSON))
	listRaw := run("list", "--json", name)
	var rows []listed
	if err := json.Unmarshal([]byte(listRaw), &rows); err != nil {
		t.Fatalf("%v: %s", err, listRaw)
	}
	if len(rows) == 1 {
		v.row = &rows[0]
	}
	v.files["list.txt"] = normalizeTable(t, run("list", name))
	v.files["list.json"] = normalizeJSON(t, []byte(listRaw))

	holders := map[string]bool{}
	for _, h := range v.st.Holders {
		holders[h.Owner] = true
	}
	for _, w := range append(append(append([]waiter(nil), v.st.Waiters...), v.st.Queue...), v.st.WaitingWriters...) {
		if holders[w.Owner] {
			t.Errorf("%s: the holder %s is shown as a waiter too: %+v", name, w.Owner, v.st)
		}
	}
	waiting := int64(len(v.st.Waiters)) + v.st.Omitted["waiters"] + int64(len(v.st.Queue)) + v.st.Omitted["queue"] +
		int64(len(v.st.WaitingWriters)) + v.st.Omitted["waiting_writers"]
	if v.row != nil && v.row.Waiters != nil && *v.row.Waiters != waiting {
		t.Errorf("%s: list counts %d waiters, inspect shows %d: %+v", name, *v.row.Waiters, waiting, v.st)
	}
	return v
}

// goldens compares each of v's views with testdata/<prefix>.<view>.
func (v view) goldens(t *testing.T, prefix string) {
	t.Helper()
	for suffix, got := range v.files {
		golden(t, prefix+"."+suffix, got)
	}
}

// check fails t at once when err is not nil.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
