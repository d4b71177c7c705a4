// Package importrules holds the test that keeps the package layering honest (crane keeps a
// similar one): the plan stays engine-independent, each heavy dependency has one owner, and
// the library never reaches up into the command.
package importrules

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testenv"
)

const module = "github.com/nginx-forge/nginx-forge"

// imports maps each package directory (relative to the repo) to the set of its imports,
// test files included: a test that imports Dagger would still drag it into the package's graph.
func imports(t *testing.T) map[string]map[string]bool { return walkImports(t, true) }

// walkImports is imports, with or without the test files.
func walkImports(t *testing.T, withTests bool) map[string]map[string]bool {
	t.Helper()
	root := testenv.RepoRoot()
	out := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || !withTests && strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if out[rel] == nil {
			out[rel] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			out[rel][path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	return out
}

func TestImportRules(t *testing.T) {
	all := imports(t)
	if len(all) < 3 {
		t.Fatalf("found only %d packages; is RepoRoot right?", len(all))
	}
	rules := []struct {
		name string
		// applies reports whether the rule covers the package directory.
		applies func(dir string) bool
		// forbidden reports whether the import is not allowed there.
		forbidden func(imp string) bool
	}{
		{"nothing under pipeline/ imports ci",
			func(dir string) bool { return strings.HasPrefix(dir, "pipeline") },
			func(imp string) bool { return imp == module+"/ci" || strings.HasPrefix(imp, module+"/ci/") }},
		{"plan imports neither Dagger nor go-containerregistry",
			func(dir string) bool { return dir == "pipeline/plan" },
			func(imp string) bool {
				return strings.HasPrefix(imp, "dagger.io/") || strings.HasPrefix(imp, "github.com/google/go-containerregistry")
			}},
		{"only the Dagger engine imports dagger.io/dagger",
			func(dir string) bool { return dir != "pipeline/engine/daggerexec" },
			func(imp string) bool { return strings.HasPrefix(imp, "dagger.io/dagger") }},
		{"only pipeline/actions imports go-githubactions",
			func(dir string) bool { return dir != "pipeline/actions" },
			func(imp string) bool { return strings.HasPrefix(imp, "github.com/sethvargo/go-githubactions") }},
		{"only the build pipeline (and the test build helper) chooses an engine",
			func(dir string) bool {
				return dir != "pipeline/forge" && dir != "pipeline/testenv/buildtree" && !strings.HasPrefix(dir, "pipeline/engine")
			},
			func(imp string) bool {
				return imp == module+"/pipeline/engine/host" || imp == module+"/pipeline/engine/daggerexec"
			}},
		{"engines import downward, never the build pipeline",
			func(dir string) bool { return strings.HasPrefix(dir, "pipeline/engine") },
			func(imp string) bool { return imp == module+"/pipeline/forge" }},
		{"the Dockerfile renderer needs neither Dagger nor go-containerregistry",
			func(dir string) bool { return dir == "pipeline/dockerfile" },
			func(imp string) bool {
				return strings.HasPrefix(imp, "dagger.io/") || strings.HasPrefix(imp, "github.com/google/go-containerregistry")
			}},
		{"lock imports nothing of ours",
			func(dir string) bool { return dir == "pipeline/lock" },
			func(imp string) bool {
				return strings.HasPrefix(imp, module+"/") && !strings.HasSuffix(imp, "/pipeline/testenv")
			}},
	}
	for _, r := range rules {
		for dir, imps := range all {
			if !r.applies(dir) {
				continue
			}
			for imp := range imps {
				if r.forbidden(imp) {
					t.Errorf("%s: %s imports %s", r.name, dir, imp)
				}
			}
		}
	}
}

// TestCommandImportsFewPipelinePackages: ci wires a handful of library packages together;
// when it needs more, the work belongs in a library package (pipeline/forge for builds).
func TestCommandImportsFewPipelinePackages(t *testing.T) {
	const most = 8
	var used []string
	for imp := range walkImports(t, false)["ci"] {
		if strings.HasPrefix(imp, module+"/pipeline/") {
			used = append(used, strings.TrimPrefix(imp, module+"/"))
		}
	}
	if len(used) == 0 {
		t.Fatal("ci imports no pipeline package: is the walker reading ci/?")
	}
	if len(used) > most {
		t.Errorf("ci imports %d pipeline packages, at most %d: %s", len(used), most, strings.Join(used, ", "))
	}
}

// authnPkg is go-containerregistry's credentials package (keychains, authenticators,
// authn.DefaultKeychain) and, under it, its other keychains (k8schain, github).
const authnPkg = "github.com/google/go-containerregistry/pkg/authn"

// keychainViolations lists the packages other than registryauth whose non-test code imports
// authn: a package that could build its own keychain, and so pull or push with credentials
// other than the ones `ci build --push` used. Packages that take a caller's keychain name
// the type registryauth.Source; tests may build whatever keychain they need.
func keychainViolations(nonTest map[string]map[string]bool) []string {
	var out []string
	for dir, imps := range nonTest {
		if dir == "pipeline/internal/registryauth" {
			continue
		}
		for imp := range imps {
			if imp == authnPkg || strings.HasPrefix(imp, authnPkg+"/") {
				out = append(out, dir+" imports "+imp)
			}
		}
	}
	return out
}

// TestOneKeychain: only pipeline/internal/registryauth builds a keychain, so every registry
// access (pull, push, base lookup, smoke) uses the same credentials.
func TestOneKeychain(t *testing.T) {
	nonTest := walkImports(t, false)
	if !nonTest["pipeline/internal/registryauth"][authnPkg] {
		t.Fatal("the walker did not see registryauth's import of authn: is it reading non-test files?")
	}
	for _, v := range keychainViolations(nonTest) {
		t.Errorf("only pipeline/internal/registryauth builds a keychain (use registryauth.Keychain, or take a registryauth.Source): %s", v)
	}
}

// TestOneKeychainCanFail plants a package importing authn (and one importing a keychain
// below it) next to the real tree and wants both reported, and nothing else.
func TestOneKeychainCanFail(t *testing.T) {
	planted := walkImports(t, false)
	planted["pipeline/planted"] = map[string]bool{authnPkg: true}
	planted["ci/planted"] = map[string]bool{authnPkg + "/github": true}
	got := keychainViolations(planted)
	sort.Strings(got)
	want := []string{"ci/planted imports " + authnPkg + "/github", "pipeline/planted imports " + authnPkg}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planted violations reported as %q, want %q", got, want)
	}
}

// TestRulesCanFail proves the walker sees real imports, so the rules above are not vacuous.
func TestRulesCanFail(t *testing.T) {
	all := imports(t)
	if !all["pipeline/internal/importrules"]["github.com/nginx-forge/nginx-forge/pipeline/testenv"] {
		t.Fatalf("the walker did not see this file's own import of testenv")
	}
	if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), "go.mod")); err != nil {
		t.Fatalf("RepoRoot has no go.mod: %v", err)
	}
}
