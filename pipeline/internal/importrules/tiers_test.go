package importrules

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// integrationTag is the build tag of the end-to-end tier: .ci/test sets it, a plain
// `go test ./...` (the fast tier, docs/tests.md) leaves those files out.
const integrationTag = "integration"

// realParts names, by package, the test helpers that need a real part of the stack: a
// process, a tool .ci/install-deps installs, root, or a download. A test file outside the
// integration tag may not call them, or the fast tier would wait on (or skip for) them.
var realParts = map[string]map[string]string{
	module + "/pipeline/testsupport/registrytest": {
		"Start": "a docker-registry process",
	},
	module + "/pipeline/testsupport/buildkittest": {
		"Start": "buildkitd and runc",
	},
	module + "/pipeline/testsupport/basetest": {
		"For": "Debian packages (apt)", "PushFor": "Debian packages (apt)", "DockerTypedFor": "Debian packages (apt)",
		"Build": "Debian packages (apt)", "BuilderFor": "debootstrap and root", "BuilderImage": "debootstrap and root",
	},
	module + "/pipeline/testsupport/testenv": {
		"BuiltTree":      "the stack compiled from the real tarballs",
		"Mirror":         "the upstream tarballs .ci/fetch-sources downloads",
		"MirrorDir":      "the upstream tarballs .ci/fetch-sources downloads",
		"SharedUpstream": "the upstream archives of ../shared/upstream",
		"Root":           "root",
		"Missing":        "a real part (it skips, or fails under NGINX_FORGE_E2E=1)",
		"E2E":            "NGINX_FORGE_E2E, the integration tier's switch",
		"Tool":           "a tool .ci/install-deps installs",
	},
	module + "/pipeline/ocirun": {
		"Prepare": "runc, umoci and root", "Pull": "runc, umoci and root",
	},
	module + "/pipeline/engine/host": {
		"SmokeImage": "runc, umoci and root",
	},
}

// fastTools are the commands testenv.Tool may look up in the fast tier: Go runs the tests
// and git holds the checkout.
var fastTools = []string{"go", "git"}

// inFastTier reports whether a file with these leading comments builds without the
// integration tag (on this platform).
func inFastTier(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return true
			}
			return expr.Eval(func(tag string) bool {
				return tag == runtime.GOOS || tag == runtime.GOARCH || tag == "unix" || strings.HasPrefix(tag, "go1.")
			})
		}
	}
	return true
}

// tierViolations lists the calls of realParts in src (a _test.go file) when the file is in
// the fast tier.
func tierViolations(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if !inFastTier(f) {
		return nil, nil
	}
	local := map[string]string{} // import name in this file -> path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if realParts[p] == nil {
			continue
		}
		n := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = p
	}
	var out []string
	allowed := map[*ast.SelectorExpr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		// testenv.Tool(t, "go", ...) and (t, "git", ...) are fast; any other command is not.
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) >= 2 {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Tool" {
				if lit, ok := call.Args[1].(*ast.BasicLit); ok {
					if cmd, _ := strconv.Unquote(lit.Value); slices.Contains(fastTools, cmd) {
						allowed[sel] = true
					}
				}
			}
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || allowed[sel] {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || local[id.Name] == "" {
			return true
		}
		if need, ok := realParts[local[id.Name]][sel.Sel.Name]; ok {
			out = append(out, fmt.Sprintf("%s:%d: %s.%s needs %s: put the test in a file under //go:build %s",
				name, fset.Position(sel.Pos()).Line, id.Name, sel.Sel.Name, need, integrationTag))
		}
		return true
	})
	return out, nil
}

// TestFastTierNeedsNoRealParts: `go test ./...` runs only tests that need no registry,
// engine, runc, BuildKit, compiled stack, Debian tool or download; the end-to-end tests that
// do live in files under //go:build integration, which .ci/test sets.
func TestFastTierNeedsNoRealParts(t *testing.T) {
	root := testenv.RepoRoot()
	files := goFiles(t, root, true)
	if len(files) < 50 {
		t.Fatalf("found only %d test files under %s", len(files), root)
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		vs, err := tierViolations(filepath.ToSlash(rel), src)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Error(v)
		}
	}
}

// TestFastTierRuleCanFail plants each kind of violation in a test file without the tag
// (and the same file under the tag, which passes).
func TestFastTierRuleCanFail(t *testing.T) {
	const head = `package x_test

import (
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	rt "github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func TestX(t *testing.T) {
	_ = testenv.RepoRoot()
	testenv.Tool(t, "git", "git")
`
	cases := []struct{ body, want string }{
		{`rt.Start(t)`, "rt.Start needs a docker-registry process"},
		{`testenv.BuiltTree(t)`, "testenv.BuiltTree needs the stack compiled"},
		{`testenv.MirrorDir(t)`, "testenv.MirrorDir needs the upstream tarballs"},
		{`testenv.Tool(t, "runc", "runc")`, "testenv.Tool needs a tool .ci/install-deps installs"},
		{`f := testenv.Root; f(t)`, "testenv.Root needs root"},
		{`ocirun.Prepare(nil, nil)`, "ocirun.Prepare needs runc"},
	}
	for _, c := range cases {
		src := head + "\t" + c.body + "\n}\n"
		got, err := tierViolations("x_test.go", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if len(got) != 1 || !strings.Contains(got[0], c.want) || !strings.Contains(got[0], "//go:build integration") {
			t.Errorf("planted %s: violations %q, want one naming %q", c.body, got, c.want)
		}
		tagged := "//go:build integration\n\n" + src
		if got, _ := tierViolations("x_test.go", []byte(tagged)); len(got) != 0 {
			t.Errorf("planted %s under the integration tag: violations %q, want none", c.body, got)
		}
	}
	if got, _ := tierViolations("x_test.go", []byte(head+"}\n")); len(got) != 0 {
		t.Errorf("testenv.RepoRoot and Tool(\"git\") in the fast tier: violations %q, want none", got)
	}
}
