package importrules

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// Size limits that keep the code readable from ci/main.go down: a function is one step a
// reader can hold (longer work is named steps), and no file is a place to get lost in.
const (
	maxFunc = 80  // lines of one function outside _test.go, in pipeline/ and ci/
	maxFile = 500 // lines of one non-test Go file
)

// longFuncsPending are the functions still over maxFunc, each "dir.Func" or
// "dir.Type.Method", in packages other helpers of issue 30 are splitting in parallel. It only
// shrinks: an entry whose function is short (or gone) fails the test, so the lead empties
// it as the splits merge.
var longFuncsPending = map[string]bool{}

// longFunc is a function over the limit: its name as longFuncsPending spells it, and the
// report line.
type longFunc struct{ name, report string }

// longFuncs lists the functions in src (a Go file in the directory dir) longer than max
// lines.
func longFuncs(dir, name string, src []byte, max int) ([]longFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []longFunc
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n <= max {
			continue
		}
		full := fn.Name.Name
		if fn.Recv != nil {
			full = recvName(fn.Recv.List[0].Type) + "." + full
		}
		out = append(out, longFunc{dir + "." + full, fmt.Sprintf("%s: func %s is %d lines (at most %d): split it into named steps", name, full, n, max)})
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

// treeLongFuncs lists the functions over maxFunc in the non-test files of pipeline/ and ci/.
func treeLongFuncs(t *testing.T) []longFunc {
	t.Helper()
	root := testenv.RepoRoot()
	var out []longFunc
	for _, top := range []string{"ci", "pipeline"} {
		files := goFiles(t, filepath.Join(root, top), false)
		if len(files) < 5 {
			t.Fatalf("found %d files in %s/", len(files), top)
		}
		for _, p := range files {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			long, err := longFuncs(path.Dir(rel), rel, src, maxFunc)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, long...)
		}
	}
	return out
}

// longFuncViolations holds long against the pending list: a long function not listed, and
// a listed one that is no longer long.
func longFuncViolations(long []longFunc, pending map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range long {
		seen[l.name] = true
		if !pending[l.name] {
			out = append(out, l.report)
		}
	}
	for n := range pending {
		if !seen[n] {
			out = append(out, fmt.Sprintf("longFuncsPending lists %s, which is no longer over %d lines (or gone): drop the entry", n, maxFunc))
		}
	}
	sort.Strings(out)
	return out
}

func TestFunctionsAreShort(t *testing.T) {
	for _, v := range longFuncViolations(treeLongFuncs(t), longFuncsPending) {
		t.Error(v)
	}
}

// TestFunctionSizeRuleCanFail plants a function one line over the limit (and a method) in
// a package of pipeline/ and one in ci/, and wants exactly those reported; then an entry
// of the pending list whose function is short.
func TestFunctionSizeRuleCanFail(t *testing.T) {
	real := treeLongFuncs(t)
	body := strings.Repeat("\t_ = 0\n", maxFunc-1)
	src := "package lock\n\nfunc planted() {\n" + body + "}\n\nfunc (T) short() {}\n\ntype T int\n\nfunc (*T) plantedMethod() {\n" + body + "}\n"
	lockLong, err := longFuncs("pipeline/lock", "pipeline/lock/planted.go", []byte(src), maxFunc)
	if err != nil {
		t.Fatal(err)
	}
	ciLong, err := longFuncs("ci", "ci/planted.go", []byte("package main\n\nfunc planted() {\n"+body+"}\n"), maxFunc)
	if err != nil {
		t.Fatal(err)
	}
	got := longFuncViolations(append(append(real, lockLong...), ciLong...), longFuncsPending)
	want := []string{
		fmt.Sprintf("ci/planted.go: func planted is %d lines (at most %d): split it into named steps", maxFunc+1, maxFunc),
		fmt.Sprintf("pipeline/lock/planted.go: func T.plantedMethod is %d lines (at most %d): split it into named steps", maxFunc+1, maxFunc),
		fmt.Sprintf("pipeline/lock/planted.go: func planted is %d lines (at most %d): split it into named steps", maxFunc+1, maxFunc),
	}
	base := longFuncViolations(real, longFuncsPending)
	if added := without(got, base); strings.Join(added, "\n") != strings.Join(want, "\n") {
		t.Errorf("planted long functions reported as %q, want %q", added, want)
	}
	// A function of exactly maxFunc lines passes.
	exact, err := longFuncs("pipeline/lock", "x.go", []byte("package lock\n\nfunc f() {\n"+strings.Repeat("\t_ = 0\n", maxFunc-2)+"}\n"), maxFunc)
	if err != nil || len(exact) != 0 {
		t.Errorf("a %d-line function is reported: %v (%v)", maxFunc, exact, err)
	}
	pending := map[string]bool{"pipeline/lock.parse": true}
	for n := range longFuncsPending {
		pending[n] = true
	}
	stale := without(longFuncViolations(real, pending), base)
	if len(stale) != 1 || !strings.Contains(stale[0], "pipeline/lock.parse, which is no longer over") {
		t.Errorf("a pending entry for a short function reported as %q", stale)
	}
}

// without is list less the entries in drop.
func without(list, drop []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
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
