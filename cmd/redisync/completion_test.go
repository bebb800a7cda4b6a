package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// completionCases are command lines being typed (the last word is the one completed) and what the
// completion must offer, and must not.
var completionCases = []struct {
	line      []string
	want, not []string
}{
	{[]string{"redisync", "lo"}, []string{"lock"}, []string{"list"}},
	{[]string{"redisync", ""}, subcommands, nil},
	{[]string{"redisync", "un"}, []string{"unlock"}, nil},
	{[]string{"redisync", "--addr", "redis:6379", "la"}, []string{"latch"}, nil},
	{[]string{"redisync", "-q", "se"}, []string{"semaphore"}, nil},
	{[]string{"redisync", "--a"}, []string{"--addr"}, []string{"--wait"}},
	{[]string{"redisync", "lock", "--fa"}, []string{"--fair"}, nil},
	{[]string{"redisync", "lock", "--"}, []string{"--fair", "--wait", "--quiet", "--verbose", "--addr"}, []string{"--json"}},
	{[]string{"redisync", "latch", "-"}, []string{"-w", "--wait", "-n", "-E", "--json", "-q"}, []string{"--fair"}},
	{[]string{"redisync", "latch", "jobs", "a"}, []string{"await"}, nil},
	{[]string{"redisync", "latch", "-w", "10", "jobs", "c"}, []string{"count", "countdown"}, []string{"await"}},
	{[]string{"redisync", "semaphore", "--up"}, []string{"--update"}, nil},
	{[]string{"redisync", "semaphore", "--add-"}, []string{"--add-permits"}, []string{"--addr"}},
	{[]string{"redisync", "unlock", "--"}, []string{"--force", "--yes", "--json"}, []string{"--wait"}},
	{[]string{"redisync", "inspect", "--w"}, []string{"--watch"}, []string{"--wait"}},
	{[]string{"redisync", "completion", ""}, []string{"bash", "zsh"}, nil},
	{[]string{"redisync", "lock", "--wait", ""}, nil, []string{"lock", "--fair"}},
}

// TestBashCompletion sources the bash script in a bash and completes each line as bash would (the
// completion function fills COMPREPLY from COMP_WORDS and COMP_CWORD).
func TestBashCompletion(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash:", err)
	}
	complete := func(line []string) []string {
		t.Helper()
		words := make([]string, len(line))
		for i, w := range line {
			words[i] = strconv.Quote(w)
		}
		script := `source <("$BIN" completion bash) || exit 9
complete -p redisync || exit 8
COMP_WORDS=(` + strings.Join(words, " ") + `)
COMP_CWORD=` + strconv.Itoa(len(line)-1) + `
_redisync
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
		cmd.Env = append(os.Environ(), "BIN="+bin, "GORACE=atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", line, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if !strings.Contains(lines[0], "complete -F _redisync redisync") {
			t.Fatalf("not registered: %s", out)
		}
		return lines[1:]
	}
	for _, tc := range completionCases {
		got := complete(tc.line)
		checkCompletion(t, tc.line, got, tc.want, tc.not)
	}
	if got := complete([]string{"redisync", "lock", "x", "--", "tru"}); !slices.Contains(got, "true") {
		t.Errorf("COMMAND: %q, want true among them", got)
	}
	if got := complete([]string{"redisync", "lock", "--cacert", "/et"}); !slices.Contains(got, "/etc") {
		t.Errorf("--cacert FILE: %q, want /etc", got)
	}
}

// TestZshCompletion runs the zsh script's function in a zsh, with the completion system's
// builtins replaced by functions that print what they would offer (compadd, matching the word
// being completed as zsh does), since they only run inside a line editor.
func TestZshCompletion(t *testing.T) {
	t.Parallel()
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("zsh is not installed (apt-get install zsh)")
		}
		t.Skip("zsh is not installed")
	}
	complete := func(line []string) []string {
		t.Helper()
		words := make([]string, len(line))
		for i, w := range line {
			words[i] = strconv.Quote(w)
		}
		script := `compadd() { while (( $# )) && [[ $1 != -- ]]; do shift; done; shift; local c; for c in "$@"; do [[ $c == ${words[CURRENT]}* ]] && print -r -- "$c"; done; }
_files() { print -r -- "<files>"; }
_command_names() { print -r -- "<commands>"; }
compdef() { print -r -- "compdef $*"; }
source <("$BIN" completion zsh) || exit 9
words=(` + strings.Join(words, " ") + `)
CURRENT=` + strconv.Itoa(len(line)) + `
_redisync`
		cmd := exec.Command(zsh, "-f", "-c", script)
		cmd.Env = append(os.Environ(), "BIN="+bin, "GORACE=atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		if err != nil && len(out) == 0 {
			t.Fatalf("%v: %v\n%s", line, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if lines[0] != "compdef _redisync redisync" {
			t.Fatalf("not registered: %s", out)
		}
		return lines[1:]
	}
	for _, tc := range completionCases {
		checkCompletion(t, tc.line, complete(tc.line), tc.want, tc.not)
	}
	if got := complete([]string{"redisync", "lock", "x", "--", "tru"}); !slices.Equal(got, []string{"<commands>"}) {
		t.Errorf("COMMAND: %q, want the command names", got)
	}
	if got := complete([]string{"redisync", "lock", "--cacert", "/et"}); !slices.Equal(got, []string{"<files>"}) {
		t.Errorf("--cacert FILE: %q, want files", got)
	}
}

func checkCompletion(t *testing.T, line, got, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%q: offered %q, want %q among them", line, got, w)
		}
	}
	for _, n := range not {
		if slices.Contains(got, n) {
			t.Errorf("%q: offered %q, want no %q", line, got, n)
		}
	}
}

// TestCompletionUsage: completion takes one shell it knows.
func TestCompletionUsage(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "fish"}, {"completion", "bash", "zsh"}} {
		p := tool(t, "127.0.0.1:1", args...)
		if code := p.run(); code != exitUsage {
			t.Errorf("%v", p)
		}
	}
}

// TestDocsCoverEveryFlag: docs/cli.md has a section for every subcommand and names every flag each
// one takes, so that the page cannot drift from the tool.
func TestDocsCoverEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, sub := range subcommands {
		if sub == "help" {
			continue
		}
		if !strings.Contains(doc, "\n## "+sub) {
			t.Errorf("docs/cli.md has no section for %s", sub)
		}
		flags, _ := flagsOf(sub)
		for _, f := range flags {
			if !strings.Contains(doc, "`"+f+"`") && !strings.Contains(doc, "`"+f+" ") {
				t.Errorf("docs/cli.md does not name %s's flag %s", sub, f)
			}
		}
	}
}
