package importrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// No package runs `go build` of this module at run time: a build of the pipeline is a
// function of the lock and the declared inputs, not of whichever Go the machine running
// `ci` has, and what the program runs shows in its code. The one Go command the product
// holds is the smoke client's build, a container step the Dagger engine runs
// (plan.SmokeClientStep), and no code that can start a process on this machine touches it.
// Test support (pipeline/testsupport) is left out: only tests link it
// (TestProgramLinksNoTestSupport).

// goCommandAllowed are the declarations (file: name) that may name the Go command, with why.
var goCommandAllowed = map[string]string{
	"pipeline/plan/smokeclient.go: SmokeClientStep": "the smoke client's build, run by the Dagger engine in a container, never here",
}

// processStarters are the imports through which Go code starts a process on this machine.
var processStarters = []string{"os/exec", "syscall", "golang.org/x/sys/unix"}

// isGoCommand reports whether a string constant names the Go command as a program.
func isGoCommand(s string) bool {
	s = strings.TrimSpace(s)
	return s == "go" || strings.HasSuffix(s, "/bin/go") || strings.HasPrefix(s, "go build") ||
		strings.HasPrefix(s, "go install") || strings.HasPrefix(s, "go run ") && !strings.HasPrefix(s, "go run ./ci")
}

// goCommandViolations checks the non-test Go files given (repo-relative path -> source).
func goCommandViolations(files map[string][]byte) ([]string, error) {
	var out []string
	for name, src := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			decl := declName(d)
			ast.Inspect(d, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && isGoCommand(s) && goCommandAllowed[name+": "+decl] == "" {
					out = append(out, fmt.Sprintf("%s: %s names the Go command (%q)", name, decl, s))
				}
				return true
			})
		}
		out = append(out, allowedReachedFrom(name, f)...)
	}
	sort.Strings(out)
	return out, nil
}

// allowedReachedFrom reports f's uses of an allowed declaration when f can start processes,
// or os.StartProcess anywhere near one.
func allowedReachedFrom(name string, f *ast.File) []string {
	starts := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		for _, s := range processStarters {
			if p == s {
				starts = p
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if sel.Sel.Name == "StartProcess" && starts == "" {
			starts = "os.StartProcess"
		}
		for allowed := range goCommandAllowed {
			_, decl, _ := strings.Cut(allowed, ": ")
			if sel.Sel.Name == decl && starts != "" {
				out = append(out, fmt.Sprintf("%s: uses %s (a Go command for the engine) and starts processes here (%s)", name, decl, starts))
			}
		}
		return true
	})
	return out
}

// declName names a top-level declaration: a function's name, or a var/const/type's names.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Name.Name
	case *ast.GenDecl:
		var names []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			}
		}
		return strings.Join(names, ", ")
	}
	return ""
}

// productFiles are the non-test Go files of pipeline/ (test support left out) and ci/.
func productFiles(t *testing.T) map[string][]byte {
	t.Helper()
	root := testenv.RepoRoot()
	out := map[string][]byte{}
	for _, top := range []string{"pipeline", "ci"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() && (d.Name() == "testdata" || rel == "pipeline/testsupport") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			out[rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestNoGoBuildAtRunTime(t *testing.T) {
	files := productFiles(t)
	if files["pipeline/plan/smokeclient.go"] == nil || files["ci/main.go"] == nil {
		t.Fatalf("the walk missed pipeline/ or ci/ (%d files)", len(files))
	}
	got, err := goCommandViolations(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		t.Errorf("no package runs the Go command at run time (the smoke client is built by the engine, plan.SmokeClientStep): %s", v)
	}
}

// TestNoGoBuildAtRunTimeCanFail plants the shapes a run-time `go build` takes: the host
// build of the client as it was (its argv declared in plan, run by the Dagger executor), an
// exec of go in the build pipeline, and the allowed in-engine step reached from code that
// starts processes. Each is reported, and nothing else.
func TestNoGoBuildAtRunTimeCanFail(t *testing.T) {
	files := productFiles(t)
	files["pipeline/plan/planted.go"] = []byte(`package plan
func SmokeClientBuild(out string) []string {
	return []string{"go", "build", "-trimpath", "-o", out, SmokeClientModule + "/ci"}
}`)
	files["pipeline/forge/planted.go"] = []byte(`package forge
import "os/exec"
func client() error { return exec.Command("/usr/local/go/bin/go", "build", "./ci").Run() }`)
	files["pipeline/engine/daggerexec/planted.go"] = []byte(`package daggerexec
import ("os/exec"; "github.com/nginx-forge/nginx-forge/pipeline/plan")
func build(p *plan.Plan) error { b := p.SmokeClientStep(); return exec.Command(b.Build[0], b.Build[1:]...).Run() }`)
	got, err := goCommandViolations(files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`pipeline/engine/daggerexec/planted.go: uses SmokeClientStep (a Go command for the engine) and starts processes here (os/exec)`,
		`pipeline/forge/planted.go: client names the Go command ("/usr/local/go/bin/go")`,
		`pipeline/plan/planted.go: SmokeClientBuild names the Go command ("go")`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planted violations reported as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
