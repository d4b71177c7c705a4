package importrules

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The exported-name rule: every exported package-level name (func, type, var, const) in a
// library package under pipeline/ is used by another package, or
// testdata/exported-unused.txt says why not. A name nothing outside uses is an
// implementation detail that reads as API: a newcomer cannot tell it from what ci relies on.
//
// What counts, and why:
//   - A use is a qualified identifier (pkg.Name) in any Go file of another package, its tests
//     included: a stand-in a test of another package needs is API. Package-level names from
//     another package can only be reached as pkg.Name (dot imports are refused below), so the
//     syntax alone is exact here and the rule needs neither go/packages nor a type-checked
//     build of Dagger and go-containerregistry.
//   - A package's own tests (in package x or x_test) do not count: a name only they reach is
//     the package's business, unexported or moved into the test. Except under
//     pipeline/testsupport, whose whole API exists for tests: there a helper its own test
//     exercises counts as used.
//   - An exported type that appears in the signature or definition of a used name (a result
//     type, a field's type, an option's type) is used through it: callers hold values of it
//     without spelling its name, and unexporting it would hide what the API returns.
//   - Methods and struct fields are exempt: they are reached through interfaces (String,
//     Error, ServeHTTP, io.Writer) and reflection (encoding/json), which no scan of call
//     sites can attribute; their signatures still make the types they name used.
//   - Package main (ci, the test build helper) exports nothing anyone can import.

// exportedAllowFile lists the exported names kept though nothing outside uses them, one
// "dir.Name reason" per line.
const exportedAllowFile = "testdata/exported-unused.txt"

// goSource is one Go file of the tree, relative to the repository root.
type goSource struct {
	rel string
	src []byte
}

// apiDecl is one exported package-level name.
type apiDecl struct {
	pos  string   // file:line
	refs []string // exported type names of the same package its signature or definition names
	typ  bool
}

// apiPkg is one package directory's exported names.
type apiPkg struct {
	dir, name string
	decls     map[string]*apiDecl
	methods   map[string][]string // receiver type -> types its exported methods' signatures name
}

// treeSources reads every Go file under pipeline/ and ci/ (testdata and dot directories
// skipped): ci is where most of the library's API is used.
func treeSources(t *testing.T) []goSource {
	t.Helper()
	root := testenv.RepoRoot()
	var out []goSource
	for _, top := range []string{"pipeline", "ci"} {
		for _, p := range append(goFiles(t, filepath.Join(root, top), false), goFiles(t, filepath.Join(root, top), true)...) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, goSource{filepath.ToSlash(rel), src})
		}
	}
	return out
}

// parsedFile is a goSource parsed.
type parsedFile struct {
	dir  string
	test bool
	f    *ast.File
	fset *token.FileSet
}

func parseSources(srcs []goSource) ([]parsedFile, error) {
	var out []parsedFile
	for _, s := range srcs {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, s.rel, s.src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		out = append(out, parsedFile{path.Dir(s.rel), strings.HasSuffix(s.rel, "_test.go"), f, fset})
	}
	return out, nil
}

// typeNames returns the identifiers in e that name an exported declaration of the same
// package (unqualified identifiers: a qualified one belongs to another package).
func typeNames(e ast.Node) []string {
	var out []string
	if e == nil {
		return nil
	}
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			return false
		case *ast.Ident:
			if n.IsExported() {
				out = append(out, n.Name)
			}
		}
		return true
	})
	return out
}

// collectDecls records the exported names of the non-test files of each library package.
func collectDecls(files []parsedFile) map[string]*apiPkg {
	pkgs := map[string]*apiPkg{}
	for _, pf := range files {
		if pf.test || pf.f.Name.Name == "main" {
			continue
		}
		p := pkgs[pf.dir]
		if p == nil {
			p = &apiPkg{dir: pf.dir, name: pf.f.Name.Name, decls: map[string]*apiDecl{}, methods: map[string][]string{}}
			pkgs[pf.dir] = p
		}
		at := func(n ast.Node) string {
			pos := pf.fset.Position(n.Pos())
			return fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
		}
		for _, d := range pf.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					p.decls[d.Name.Name] = &apiDecl{pos: at(d), refs: typeNames(d.Type)}
					continue
				}
				if recv := recvName(d.Recv.List[0].Type); recv != "" {
					p.methods[recv] = append(p.methods[recv], typeNames(d.Type)...)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							p.decls[s.Name.Name] = &apiDecl{pos: at(s), refs: typeNames(s.Type), typ: true}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								refs := typeNames(s.Type)
								for _, v := range s.Values {
									refs = append(refs, typeNames(v)...)
								}
								p.decls[n.Name] = &apiDecl{pos: at(n), refs: refs}
							}
						}
					}
				}
			}
		}
	}
	return pkgs
}

// recvName is the type name of a method receiver (T, *T, T[P], *T[P]).
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// collectUses returns, per package directory, the exported names other packages (and, for
// test support, the package's own tests) reach as pkg.Name.
func collectUses(files []parsedFile, pkgs map[string]*apiPkg) (map[string]map[string]bool, error) {
	used := map[string]map[string]bool{}
	for _, pf := range files {
		local := map[string]*apiPkg{}
		for _, imp := range pf.f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			target := pkgs[strings.TrimPrefix(ip, module+"/")]
			if !strings.HasPrefix(ip, module+"/") || target == nil {
				continue
			}
			name := target.name
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if name == "." {
				return nil, fmt.Errorf("%s dot-imports %s: the exported-name rule reads pkg.Name uses only", pf.fset.Position(imp.Pos()).Filename, ip)
			}
			own := target.dir == pf.dir
			if name != "_" && (!own || pf.test && strings.HasPrefix(pf.dir, "pipeline/testsupport")) {
				local[name] = target
			}
		}
		if len(local) == 0 && !(pf.test && strings.HasPrefix(pf.dir, "pipeline/testsupport")) {
			continue
		}
		ast.Inspect(pf.f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && local[id.Name] != nil {
				mark(used, local[id.Name].dir, sel.Sel.Name)
			}
			return true
		})
		// Test support's own in-package tests name its helpers unqualified.
		if own := pkgs[pf.dir]; own != nil && pf.test && pf.f.Name.Name == own.name && strings.HasPrefix(pf.dir, "pipeline/testsupport") {
			ast.Inspect(pf.f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && own.decls[id.Name] != nil {
					mark(used, own.dir, id.Name)
				}
				return true
			})
		}
	}
	return used, nil
}

func mark(used map[string]map[string]bool, dir, name string) {
	if used[dir] == nil {
		used[dir] = map[string]bool{}
	}
	used[dir][name] = true
}

// unusedExported lists "dir.Name" for each exported name no other package reaches, directly
// or as a type in the API of a name that is reached, sorted, with where each is declared.
func unusedExported(srcs []goSource) (map[string]string, error) {
	files, err := parseSources(srcs)
	if err != nil {
		return nil, err
	}
	pkgs := collectDecls(files)
	used, err := collectUses(files, pkgs)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for dir, p := range pkgs {
		reached := map[string]bool{}
		var queue []string
		for n := range used[dir] {
			queue = append(queue, n)
		}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			d := p.decls[n]
			if d == nil || reached[n] {
				continue
			}
			reached[n] = true
			queue = append(queue, d.refs...)
			if d.typ {
				queue = append(queue, p.methods[n]...)
			}
		}
		for n, d := range p.decls {
			if !reached[n] {
				out[dir+"."+n] = d.pos
			}
		}
	}
	return out, nil
}

// exportedAllowed reads testdata/exported-unused.txt: "dir.Name reason", # comments, blank
// lines. An entry without a reason is an error.
func exportedAllowed(src []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(src))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, reason, _ := strings.Cut(text, " ")
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: %s has no reason: say why it stays exported", exportedAllowFile, line, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", exportedAllowFile, line, name)
		}
		out[name] = strings.TrimSpace(reason)
	}
	return out, sc.Err()
}

// exportedViolations holds the unused names against the allowlist: unused and unlisted, and
// listed but used (or gone), so the list only ever names what it must.
func exportedViolations(unused, allowed map[string]string) []string {
	var out []string
	for n, pos := range unused {
		if _, ok := allowed[n]; !ok {
			out = append(out, fmt.Sprintf("%s: exported %s is used by no other package: unexport it, delete it, or give a reason in %s", pos, n, exportedAllowFile))
		}
	}
	for n := range allowed {
		if _, ok := unused[n]; !ok {
			out = append(out, fmt.Sprintf("%s lists %s, which is used outside its package or no longer exists: drop the line", exportedAllowFile, n))
		}
	}
	sort.Strings(out)
	return out
}

func readExportedAllowed(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(exportedAllowFile)
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := exportedAllowed(src)
	if err != nil {
		t.Fatal(err)
	}
	return allowed
}

func TestExportedNamesAreUsed(t *testing.T) {
	srcs := treeSources(t)
	unused, err := unusedExported(srcs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range exportedViolations(unused, readExportedAllowed(t)) {
		t.Error(v)
	}
}

// TestExportedRuleCanFail plants names into the real tree and wants each reported or not as
// the rule says: an exported func nothing calls; one only its own package's test calls; one
// another package's test calls (used); a type only a used func returns (used through it);
// and, under test support, a helper only its own test calls (used).
func TestExportedRuleCanFail(t *testing.T) {
	srcs := treeSources(t)
	base, err := unusedExported(srcs)
	if err != nil {
		t.Fatal(err)
	}
	planted := append(srcs[:len(srcs):len(srcs)],
		goSource{"pipeline/lock/planted.go", []byte("package lock\n\nfunc PlantedUnused() {}\nfunc PlantedOwnTest() {}\nfunc PlantedOther() PlantedResult { return 0 }\n\ntype PlantedResult int\n")},
		goSource{"pipeline/lock/planted_test.go", []byte("package lock_test\n\nimport \"" + module + "/pipeline/lock\"\n\nvar _ = lock.PlantedOwnTest\n")},
		goSource{"pipeline/plan/planted_test.go", []byte("package plan\n\nimport l \"" + module + "/pipeline/lock\"\n\nvar _ = l.PlantedOther\n")},
		goSource{"pipeline/testsupport/testenv/planted.go", []byte("package testenv\n\nfunc PlantedHelper() {}\n")},
		goSource{"pipeline/testsupport/testenv/planted_test.go", []byte("package testenv\n\nvar _ = PlantedHelper\n")},
	)
	got, err := unusedExported(planted)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for n := range got {
		if _, ok := base[n]; !ok {
			added = append(added, n)
		}
	}
	sort.Strings(added)
	want := []string{"pipeline/lock.PlantedOwnTest", "pipeline/lock.PlantedUnused"}
	if strings.Join(added, " ") != strings.Join(want, " ") {
		t.Errorf("planted names newly reported as unused: %q, want %q", added, want)
	}
	// Against an allowlist of what the real tree leaves unused, exactly the planted names fail.
	if v := exportedViolations(got, base); len(v) != 2 || !strings.Contains(strings.Join(v, "\n"), "lock.PlantedOwnTest is used by no other") || !strings.Contains(strings.Join(v, "\n"), "lock.PlantedUnused is used by no other") {
		t.Errorf("planted violations reported as %q", v)
	}
	if _, err := exportedAllowed([]byte("pipeline/lock.Foo\n")); err == nil {
		t.Error("an allowlist entry without a reason is accepted")
	}
	dot := append(srcs[:len(srcs):len(srcs)], goSource{"pipeline/plan/dot.go", []byte("package plan\n\nimport . \"" + module + "/pipeline/lock\"\n")})
	if _, err := unusedExported(dot); err == nil {
		t.Error("a dot import, which hides uses from the rule, is accepted")
	}
}
