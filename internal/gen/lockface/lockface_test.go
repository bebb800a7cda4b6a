package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module's root, from this package's directory.
const root = "../../.."

// TestFilesAreCurrent fails when a package's generated file is not what lockface writes now: edited
// by hand, or left behind by a change to the faces.
func TestFilesAreCurrent(t *testing.T) {
	for _, f := range faces {
		dir := t.TempDir()
		if err := write(f, dir); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, f.file))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(f.pkg, f.file)
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%v: run go generate ./%s", err, f.pkg)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what lockface writes: run go generate ./%s", path, f.pkg)
		}
	}
}

// TestPackagesGenerate fails when a package's directive to go generate is missing, so that go generate
// ./... writes every face.
func TestPackagesGenerate(t *testing.T) {
	const directive = "//go:generate go run ../internal/gen/lockface\n"
	for _, f := range faces {
		files, err := filepath.Glob(filepath.Join(root, f.pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, name := range files {
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			found = found || strings.Contains(string(src), directive)
		}
		if !found {
			t.Errorf("no file of package %s has the line %q", f.pkg, strings.TrimSpace(directive))
		}
	}
}
