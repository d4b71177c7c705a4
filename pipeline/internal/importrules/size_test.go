package importrules

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// Size limits that keep the code readable from ci/main.go down: the command's functions stay
// short (the work belongs in a library package), and no file is a place to get lost in.
const (
	maxCommandFunc = 80  // lines of one function in ci/
	maxFile        = 500 // lines of one non-test Go file
)

// longFuncs names the functions in src (a Go file) longer than max lines.
func longFuncs(name string, src []byte, max int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n > max {
			out = append(out, fmt.Sprintf("%s: func %s is %d lines (at most %d)", name, fn.Name.Name, n, max))
		}
	}
	return out, nil
}

func goFiles(t *testing.T, root string, tests bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && tests == strings.HasSuffix(p, "_test.go") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCommandFunctionsAreShort(t *testing.T) {
	root := testenv.RepoRoot()
	files := goFiles(t, filepath.Join(root, "ci"), false)
	if len(files) < 5 {
		t.Fatalf("found %d files in ci/", len(files))
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		long, err := longFuncs(p, src, maxCommandFunc)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range long {
			t.Error(l)
		}
	}
	// Planted: a function one line over the limit is reported.
	body := strings.Repeat("\t_ = 0\n", maxCommandFunc-1)
	long, err := longFuncs("planted.go", []byte("package main\n\nfunc planted() {\n"+body+"}\n"), maxCommandFunc)
	if err != nil || len(long) != 1 {
		t.Errorf("planted %d-line function reported as %q (%v)", maxCommandFunc+1, long, err)
	}
}

func TestNoFileIsLong(t *testing.T) {
	root := testenv.RepoRoot()
	over := func(p string, src []byte) bool { return bytes.Count(src, []byte("\n")) > maxFile }
	for _, p := range goFiles(t, root, false) {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if over(p, src) {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s has %d lines, at most %d: split it by concern", rel, bytes.Count(src, []byte("\n")), maxFile)
		}
	}
	if !over("planted.go", bytes.Repeat([]byte("//\n"), maxFile+1)) {
		t.Error("a planted file over the limit is not reported")
	}
}
