package daggerexec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// This package must stay a mapping of the plan: every flag, script, package name and
// container path it hands to the engine comes from pipeline/plan. These tests read the
// package's own source, so a recipe literal slipped in here fails them.

// recipeRE matches what a compiler flag, a shell command or a build recipe looks like.
var recipeRE = regexp.MustCompile(strings.Join([]string{
	`(^|\s)-{1,2}[A-Za-z]`, // -O2, -march=, --with-..., --prefix, -euo
	`\./configure|\bConfigure\b|\bmake\b|\bapt-get\b|\bapt\b|\bdpkg\b`,
	`\bbash\b|\bsh\b|pipefail|\$\(|\$\{|&&|\|\|`,
	`\b(gcc|cc|clang|strip|ld|ar|tar|chown|chmod|mkdir|rm|install|nproc|curl|wget)\b`,
	`\b[A-Z]*FLAGS\b|_OPT\b|\bDEP_|\bJOBS\b|\bSRC\b|\bOUT\b|\bWORK\b`,
	`^/[A-Za-z]`, // container paths come from plan constants
}, "|"))

// allowed are phrases of messages that look like the above but are not recipe.
var allowed = []string{
	"--engine",     // ci's flag, named in the no-engine error
	"install tree", // the name of the build's output
}

// containerCalls are the Dagger builder methods: none may take a literal argument at all.
var containerCalls = map[string]bool{
	"From": true, "WithExec": true, "WithEnvVariable": true, "WithNewFile": true,
	"WithFile": true, "WithDirectory": true, "WithMountedCache": true, "WithMountedDirectory": true,
	"WithWorkdir": true, "WithoutMount": true, "Directory": true, "WithExposedPort": true,
	"WithMountedFile": true, "WithMountedSecret": true, "WithUser": true, "WithEntrypoint": true,
	"AsService": true, "WithServiceBinding": true, "WithMountedTemp": true,
}

func sources(t *testing.T) map[string]*ast.File {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = af
	}
	if len(out) < 2 {
		t.Fatalf("found only %d source files; is the test running in pipeline/engine/daggerexec?", len(out))
	}
	return out
}

func TestNoRecipeLiterals(t *testing.T) {
	for name, f := range sources(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false // import paths are not recipe
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range allowed {
				s = strings.ReplaceAll(s, a, "")
			}
			if m := recipeRE.FindString(s); m != "" {
				t.Errorf("%s: string literal %s looks like a flag, script or container path (%q): take it from pipeline/plan", name, lit.Value, m)
			}
			return true
		})
	}
}

func TestContainerCallsTakeNoLiterals(t *testing.T) {
	calls := 0
	for name, f := range sources(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !containerCalls[sel.Sel.Name] {
				return true
			}
			calls++
			for _, arg := range call.Args {
				ast.Inspect(arg, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.BasicLit:
						if x.Kind == token.STRING {
							t.Errorf("%s: %s(...) is given the literal %s: container inputs come from the plan", name, sel.Sel.Name, x.Value)
						}
					case *ast.CompositeLit:
						// []string{...} built here would be a command of this package's own.
						if _, ok := x.Type.(*ast.ArrayType); ok {
							t.Errorf("%s: %s(...) is given a slice literal: commands come from the plan", name, sel.Sel.Name)
						}
					}
					return true
				})
			}
			return true
		})
	}
	if calls < 8 {
		t.Fatalf("found only %d container calls; the check is not looking at the executor", calls)
	}
}

// TestRecipeREFires keeps the pattern honest: it must catch the literals it exists for.
func TestRecipeREFires(t *testing.T) {
	for _, s := range []string{"-O2", "--with-http_ssl_module", "./configure --prefix=/usr", "make -j4",
		"apt-get install -y", "bash", "set -euo pipefail", "CFLAGS", "/src", "/out/nginx", "strip"} {
		if !recipeRE.MatchString(s) {
			t.Errorf("recipeRE misses %q", s)
		}
	}
}
