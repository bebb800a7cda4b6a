package lua_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// script is one file of the package as the tests read it.
type script struct {
	name  string
	lines []string
	head  map[string][]string // "KEYS", "ARGV", "BATCH": the names its header lines give
}

// scripts returns every embedded file that is a script (it has a KEYS or ARGV header), by name.
func scripts(t *testing.T) []script {
	t.Helper()
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	var out []script
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := script{name: f, lines: strings.Split(string(b), "\n"), head: map[string][]string{}}
		for _, line := range s.lines {
			for _, what := range []string{"KEYS", "ARGV", "BATCH"} {
				if rest, ok := strings.CutPrefix(line, "--! "+what+" "); ok {
					s.head[what] = strings.Fields(rest)
				}
			}
		}
		if s.head["KEYS"] != nil || s.head["ARGV"] != nil {
			out = append(out, s)
		}
	}
	return out
}

// Every script file is the whole recipe: it loads by its name alone, with the KEYS and ARGV its own
// header declares, and with the mode and the memos' TTL the loader gives.
func TestEveryScriptLoadsByItsName(t *testing.T) {
	rdb := testkit.Standalone(t).Redis(t)
	prefix := fmt.Sprintf("local MODE, MEMO_TTL = 0, %d\n", lua.MemoTTL.Milliseconds())
	for _, f := range scripts(t) {
		s := lua.Load(f.name)
		if s.Name() != f.name {
			t.Errorf("%s: named %q", f.name, s.Name())
		}
		if !slices.Equal(s.Keys(), f.head["KEYS"]) || !slices.Equal(s.Args(), f.head["ARGV"]) {
			t.Errorf("%s: KEYS %v ARGV %v, its header declares %v and %v", f.name, s.Keys(), s.Args(), f.head["KEYS"], f.head["ARGV"])
		}
		src := source(t, rdb, s)
		if !strings.HasPrefix(src, prefix) {
			t.Errorf("%s: begins %q, want %q", f.name, src[:min(len(src), 40)], prefix)
		}
		if strings.Contains(src, "--! INCLUDE") {
			t.Errorf("%s: an INCLUDE line is left in what is sent", f.name)
		}
		if r := s.Resent(); r != s && strings.Replace(source(t, rdb, r), "MODE, MEMO_TTL = 1,", "MODE, MEMO_TTL = 0,", 1) != src {
			t.Errorf("%s: its Resent variant differs by more than its MODE", f.name)
		}
	}
}

// source returns what the script sends.
func source(t *testing.T, rdb rueidis.Client, s *lua.Script) string {
	t.Helper()
	cmd := s.EvalCommand(rdb, nil, nil)
	c := cmd.Commands()
	if len(c) < 2 {
		t.Fatalf("%s: EVAL %v", s.Name(), c)
	}
	return c[1]
}

var (
	fixedIndex = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
	naming     = regexp.MustCompile(`^local ([\w, ]+) = (.+)$`)
	named      = regexp.MustCompile(`^(?:tonumber\()?(KEYS|ARGV)\[(\d+)\]\)?$`)
)

// A script names its KEYS and ARGV once, at the top, as its header declares them (a batch's ARGV as
// its BATCH line declares those before the holds' own), and its body reads them by those names:
// no KEYS[7] .. ARGV[3] in a body.
func TestScriptsNameTheirKeysAndArgsOnce(t *testing.T) {
	for _, f := range scripts(t) {
		top := true
		for i, line := range f.lines {
			code := strings.TrimSpace(line)
			if code == "" || strings.HasPrefix(code, "--") {
				continue
			}
			if top {
				if names, ok := namesOf(line); ok {
					for j, ref := range names {
						header := f.head[ref.kind]
						if ref.kind == "ARGV" && f.head["BATCH"] != nil {
							header = f.head["BATCH"]
						}
						if ref.i > len(header) || header[ref.i-1] != ref.name {
							t.Errorf("%s:%d: name %d, %q, is %s[%d], which its header calls %q", f.name, i+1, j+1, ref.name, ref.kind, ref.i, at(header, ref.i))
						}
					}
					continue
				}
				top = false
			}
			if m := fixedIndex.FindString(code); m != "" {
				t.Errorf("%s:%d: %s read in the body: name it at the top, as the header does", f.name, i+1, m)
			}
		}
	}
}

type ref struct {
	name, kind string
	i          int
}

// namesOf reads a naming line, "local a, b = KEYS[1], tonumber(ARGV[2])".
func namesOf(line string) ([]ref, bool) {
	m := naming.FindStringSubmatch(line)
	if m == nil {
		return nil, false
	}
	names, exprs := strings.Split(m[1], ","), strings.Split(m[2], ",")
	if len(names) != len(exprs) {
		return nil, false
	}
	var out []ref
	for i := range names {
		e := named.FindStringSubmatch(strings.TrimSpace(exprs[i]))
		if e == nil {
			return nil, false
		}
		var n int
		fmt.Sscan(e[2], &n)
		out = append(out, ref{strings.TrimSpace(names[i]), e[1], n})
	}
	return out, true
}

func at(names []string, i int) string {
	if i < 1 || i > len(names) {
		return ""
	}
	return names[i-1]
}

// Every script that keeps a memo does it through once.lua, which alone spells a memo's format, its
// TTL and its 'undone'; the TTL is the loader's MEMO_TTL, never a number in a script.
func TestMemosThroughOnceAlone(t *testing.T) {
	rdb := testkit.Standalone(t).Redis(t)
	files, _ := filepath.Glob("*.lua")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "--")
			if strings.Contains(code, "60000") && !strings.Contains(code, "600000") {
				t.Errorf("%s:%d: the memos' TTL as a number: %s", f, i+1, strings.TrimSpace(line))
			}
			if f != "once.lua" && (strings.Contains(code, "'undone'") || strings.Contains(code, "MEMO_TTL")) {
				t.Errorf("%s:%d: a memo spelled out of once.lua: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	for _, f := range scripts(t) {
		if !slices.Contains(f.head["KEYS"], "memo") {
			continue
		}
		if !strings.Contains(source(t, rdb, lua.Load(f.name)), "local function recall(memo)") {
			t.Errorf("%s: takes a memo but does not include once.lua", f.name)
		}
	}
}

// onceScript runs once.lua's functions in mode as a script would: op "keep" remembers the reply
// ARGV[2..] ('nil', or integers: one is an integer, more an array) under KEYS[1] and recalls it,
// answering {found, ttl, reply...}; op "undo" answers {undone(KEYS[1], took) and 1 or 0, the memo
// after}, took being ARGV[2] ('nil', 'true', 'false').
func onceScript(t *testing.T, mode int) *lua.Script {
	t.Helper()
	once, err := os.ReadFile("once.lua")
	if err != nil {
		t.Fatal(err)
	}
	driver := `
local memo, op = KEYS[1], ARGV[1]
if op == 'undo' then
  local took = ({['nil'] = nil, ['true'] = true, ['false'] = false})[ARGV[2]]
  return {undone(memo, took) and 1 or 0, redis.call('get', memo) or 'none'}
end
local reply
if ARGV[2] ~= 'nil' then
  reply = {}
  for i = 2, #ARGV do
    reply[#reply + 1] = tonumber(ARGV[i])
  end
  if #reply == 1 then
    reply = reply[1]
  end
end
if remember(memo, reply) ~= reply then
  return redis.error_reply('remember did not return its reply')
end
local found, got = recall(memo)
local out = {found and 1 or 0, redis.call('pttl', memo)}
if type(got) == 'table' then
  for _, n in ipairs(got) do
    out[#out + 1] = n
  end
elseif got then
  out[#out + 1] = got
end
return out`
	src := fmt.Sprintf("local MODE, MEMO_TTL = %d, %d\n%s\n%s", mode, lua.MemoTTL.Milliseconds(), once, driver)
	return lua.New(fmt.Sprintf("once.lua, mode %d", mode), src)
}

// A memo keeps a reply as it was (nil, an integer of any size a reply carries, an array) for
// MEMO_TTL at most; an undo recalls and keeps nothing.
func TestMemoKeepsReplies(t *testing.T) {
	rdb, memo := memoOf(t, "1")
	ctx := context.Background()
	ttl := lua.MemoTTL.Milliseconds()
	for _, mode := range []int{0, 1} {
		for _, reply := range [][]string{{"nil"}, {"0"}, {"-3"}, {"1700000000000123"}, {"1", "4", "1700000000000123"}, {"0", "1"}, {"-2"}} {
			got, err := onceScript(t, mode).Exec(ctx, rdb, []string{memo}, append([]string{"keep"}, reply...)).AsIntSlice()
			if err != nil {
				t.Fatalf("mode %d, %v: %v", mode, reply, err)
			}
			want := []string{"1"}
			if reply[0] != "nil" {
				want = append(want, reply...)
			}
			if got[0] != 1 || got[1] <= 0 || got[1] > ttl || fmt.Sprint(append(got[:1:1], got[2:]...)) != fmt.Sprint(ints(want)) {
				t.Errorf("mode %d: kept %v, recalled %v (pttl %d), want %v and a pttl within %d", mode, reply, append(got[:1:1], got[2:]...), got[1], want, ttl)
			}
		}
	}
	testkit.Do(t, rdb, "DEL", memo)
	got, err := onceScript(t, 2).Exec(ctx, rdb, []string{memo}, []string{"keep", "7"}).AsIntSlice()
	if err != nil || got[0] != 0 || got[1] != -2 {
		t.Errorf("an undo kept or recalled a memo: %v, %v", got, err)
	}
}

// memoOf returns a client and the memo of request id rid, which is deleted when the test ends.
func memoOf(t *testing.T, rid string) (rueidis.Client, string) {
	rdb := testkit.Standalone(t).Redis(t)
	memo := "redisync_once:{memo-test}:" + rid
	t.Cleanup(func() { testkit.Do(t, rdb, "DEL", memo) })
	return rdb, memo
}

func ints(s []string) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		fmt.Sscan(v, &out[i])
	}
	return out
}

// An undo gives back an acquisition once: when it kept a memo, or when its trace shows that it ran
// (took); it then marks the memo 'undone'. Where nothing but the memo tells (took nil), an
// acquisition that has not run is marked too, so that it takes nothing if it is still on its way.
func TestUndoneGivesBackOnce(t *testing.T) {
	rdb, memo := memoOf(t, "2")
	ctx := context.Background()
	for _, c := range []struct {
		memo, took string
		undone     int64
		after      string
	}{
		{"", "nil", 1, "undone"},
		{"", "false", 1, "none"},
		{"", "true", 0, "undone"},
		{"a1", "nil", 0, "undone"},
		{"a1,2,0", "false", 0, "undone"},
		{"undone", "nil", 1, "undone"},
		{"undone", "true", 1, "undone"},
	} {
		testkit.Do(t, rdb, "DEL", memo)
		if c.memo != "" {
			testkit.Do(t, rdb, "SET", memo, c.memo)
		}
		res, err := onceScript(t, 2).Exec(ctx, rdb, []string{memo}, []string{"undo", c.took}).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res[0].AsInt64()
		after, _ := res[1].ToString()
		if n != c.undone || after != c.after {
			t.Errorf("memo %q, took %s: undone %d, memo %q after; want %d, %q", c.memo, c.took, n, after, c.undone, c.after)
		}
		for _, mode := range []int{0, 1} { // a first send, or one sent again, gives nothing back
			res, err := onceScript(t, mode).Exec(ctx, rdb, []string{memo}, []string{"undo", c.took}).ToArray()
			if n, _ := res[0].AsInt64(); err != nil || n != 0 {
				t.Errorf("mode %d: undone answered %v, %v", mode, res, err)
			}
		}
	}
}
