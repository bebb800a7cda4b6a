package redisync_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCodeIsTested: every Go block of the README is, character for character (a tab shown as
// four spaces), the body of a function that a test compiles: ExampleNew, or a quickStart function of
// a package's quickstart_test.go, which that package's Example_quickStart runs. And every such body
// is in the README, so that neither can change without the other.
func TestReadmeCodeIsTested(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatal("no Go block in the README")
	}

	bodies := map[string]string{} // body -> where it is
	files, err := filepath.Glob("*quickstart_test.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("*/quickstart_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append(files, more...) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !(strings.HasPrefix(fn.Name.Name, "quickStart") || fn.Name.Name == "ExampleNew") {
				continue
			}
			from, to := fset.Position(fn.Body.Lbrace).Offset+1, fset.Position(fn.Body.Rbrace).Offset
			body := strings.TrimSuffix(string(src[from:to]), "\n") + "\n"
			bodies[shown(body)] = file + ": " + fn.Name.Name
		}
	}
	if len(bodies) < 10 {
		t.Fatalf("found %d quick-start functions, want one per primitive", len(bodies))
	}

	inReadme := map[string]bool{}
	for _, b := range blocks {
		if _, ok := bodies[b]; !ok {
			t.Errorf("a Go block of the README is no tested function's body (change the function in a quickstart_test.go, then copy its body):\n%s", b)
		}
		inReadme[b] = true
	}
	for body, where := range bodies {
		if !inReadme[body] {
			t.Errorf("%s is not in the README as it stands", where)
		}
	}
}

// shown returns a function body as the README shows it: without its first newline, dedented by one
// tab, and each remaining leading tab as four spaces.
func shown(body string) string {
	body = strings.TrimPrefix(body, "\n")
	lines := strings.Split(body, "\n")
	for i, line := range lines {
		line = strings.TrimPrefix(line, "\t")
		indent := len(line) - len(strings.TrimLeft(line, "\t"))
		lines[i] = strings.Repeat("    ", indent) + line[indent:]
	}
	return strings.Join(lines, "\n")
}
