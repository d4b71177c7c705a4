// Package importrules holds the test that keeps the package layering honest (crane keeps a
// similar one): the plan stays engine-independent, each heavy dependency has one owner, and
// the library never reaches up into the command.
package importrules

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
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
	for _, v := range violations(all) {
		t.Error(v)
	}
}

// rule is one layering rule over the import graph.
type rule struct {
	name string
	// applies reports whether the rule covers the package directory.
	applies func(dir string) bool
	// forbidden reports whether the import is not allowed there.
	forbidden func(imp string) bool
}

// rules are the layering rules TestImportRules holds every package to.
func rules() []rule {
	return []rule{
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
		// ci chooses the engine and hands it to forge.Run: no library package decides where a
		// build runs (the test build helper drives the host executor directly).
		{"only ci (and the test build helper) imports an engine",
			func(dir string) bool {
				return dir != "ci" && dir != "pipeline/testsupport/testenv/buildtree" && !strings.HasPrefix(dir, "pipeline/engine")
			},
			func(imp string) bool {
				return imp == module+"/pipeline/engine/host" || imp == module+"/pipeline/engine/daggerexec"
			}},
		// A build does not look for releases: the branch calendar reaches it as a function
		// (forge.WithBranchWarnings), and publishing needs no GitHub API.
		{"forge imports neither upstream nor the GitHub clients",
			func(dir string) bool { return dir == "pipeline/forge" },
			func(imp string) bool {
				return imp == module+"/pipeline/upstream" || strings.HasPrefix(imp, module+"/pipeline/upstream/") ||
					imp == module+"/pipeline/actions" || strings.HasPrefix(imp, "github.com/sethvargo/go-githubactions")
			}},
		{"engines import downward, never the build pipeline",
			func(dir string) bool { return strings.HasPrefix(dir, "pipeline/engine") },
			func(imp string) bool { return imp == module+"/pipeline/forge" }},
		{"the Dockerfile renderer needs neither Dagger nor go-containerregistry",
			func(dir string) bool { return dir == "pipeline/dockerfile" },
			func(imp string) bool {
				return strings.HasPrefix(imp, "dagger.io/") || strings.HasPrefix(imp, "github.com/google/go-containerregistry")
			}},
		{"lock imports nothing of ours but safeio",
			func(dir string) bool { return dir == "pipeline/lock" },
			func(imp string) bool {
				return strings.HasPrefix(imp, module+"/") && imp != module+"/pipeline/safeio" && !strings.HasSuffix(imp, "/pipeline/testsupport/testenv")
			}},
		// The reading, writing and redaction rules are the bottom of the graph: every package
		// may use them, so they use none of ours.
		{"safeio imports nothing of ours",
			func(dir string) bool { return dir == "pipeline/safeio" },
			func(imp string) bool { return strings.HasPrefix(imp, module+"/") }},
		// The one rule for failures to reach a server is shared by source (build) and
		// upstream (check-updates): it stays below both, so neither can bend it its own way.
		{"netfail imports nothing of ours",
			func(dir string) bool { return dir == "pipeline/internal/netfail" },
			func(imp string) bool { return strings.HasPrefix(imp, module+"/") }},
		// The suite is what is checked; running an image in runc is the host engine's runner
		// (pipeline/engine/host), so the Dagger executor, which runs the suite, links no runc code.
		{"the smoke suite does not import ocirun",
			func(dir string) bool { return dir == "pipeline/smoke" || strings.HasPrefix(dir, "pipeline/smoke/") },
			runcImport},
	}
}

// runcImport is true for the packages that run containers with runc on this machine.
func runcImport(imp string) bool {
	return imp == module+"/pipeline/ocirun" || strings.HasPrefix(imp, module+"/pipeline/ocirun/") ||
		imp == "github.com/opencontainers/runc" || strings.HasPrefix(imp, "github.com/opencontainers/runc/")
}

// violations lists every import in all that breaks a rule, as "rule: dir imports imp".
func violations(all map[string]map[string]bool) []string {
	var out []string
	for _, r := range rules() {
		for dir, imps := range all {
			if !r.applies(dir) {
				continue
			}
			for imp := range imps {
				if r.forbidden(imp) {
					out = append(out, fmt.Sprintf("%s: %s imports %s", r.name, dir, imp))
				}
			}
		}
	}
	return out
}

// TestPlantedImportsBreakRules proves the rules catch what they name: the real graph with
// one forbidden import planted into a package gains exactly that violation, of that rule.
func TestPlantedImportsBreakRules(t *testing.T) {
	before := map[string]bool{}
	for _, v := range violations(imports(t)) {
		before[v] = true
	}
	cases := []struct{ dir, imp, rule string }{
		{"pipeline/bench", module + "/ci", "nothing under pipeline/ imports ci"},
		{"pipeline/plan", "github.com/google/go-containerregistry/pkg/v1", "plan imports neither Dagger nor go-containerregistry"},
		{"pipeline/forge", "dagger.io/dagger", "only the Dagger engine imports dagger.io/dagger"},
		{"pipeline/upstream", "github.com/sethvargo/go-githubactions", "only pipeline/actions imports go-githubactions"},
		{"pipeline/bench", module + "/pipeline/engine/host", "only ci (and the test build helper) imports an engine"},
		{"pipeline/forge", module + "/pipeline/engine/daggerexec", "only ci (and the test build helper) imports an engine"},
		{"pipeline/forge", module + "/pipeline/upstream", "forge imports neither upstream nor the GitHub clients"},
		{"pipeline/forge", module + "/pipeline/actions", "forge imports neither upstream nor the GitHub clients"},
		{"pipeline/engine/host", module + "/pipeline/forge", "engines import downward, never the build pipeline"},
		{"pipeline/dockerfile", "github.com/google/go-containerregistry/pkg/v1", "the Dockerfile renderer needs neither Dagger nor go-containerregistry"},
		{"pipeline/lock", module + "/pipeline/plan", "lock imports nothing of ours but safeio"},
		{"pipeline/safeio", module + "/pipeline/lock", "safeio imports nothing of ours"},
		{"pipeline/internal/netfail", module + "/pipeline/source", "netfail imports nothing of ours"},
		{"pipeline/smoke", module + "/pipeline/ocirun", "the smoke suite does not import ocirun"},
		{"pipeline/smoke", "github.com/opencontainers/runc/libcontainer", "the smoke suite does not import ocirun"},
	}
	// Every rule is shown to fail.
	for _, r := range rules() {
		if !slices.ContainsFunc(cases, func(c struct{ dir, imp, rule string }) bool { return c.rule == r.name }) {
			t.Errorf("rule %q has no planted violation here", r.name)
		}
	}
	for _, c := range cases {
		all := imports(t)
		if all[c.dir] == nil {
			t.Fatalf("no package %s in the graph", c.dir)
		}
		all[c.dir][c.imp] = true
		var got []string
		for _, v := range violations(all) {
			if !before[v] {
				got = append(got, v)
			}
		}
		want := c.rule + ": " + c.dir + " imports " + c.imp
		if len(got) != 1 || got[0] != want {
			t.Errorf("planted %s in %s: new violations %q, want only %q", c.imp, c.dir, got, want)
		}
	}
}

// TestDaggerExecutorLinksNoRunc: the Dagger executor runs the suite in the engine, never in
// runc here, so nothing it links (directly or not) is runc code. go list sees what the
// import rules above cannot: the whole transitive graph the binary links.
func TestDaggerExecutorLinksNoRunc(t *testing.T) {
	if bad := linksRunc(t, module+"/pipeline/engine/daggerexec"); len(bad) > 0 {
		t.Errorf("the Dagger executor links runc code: %s (the runc runner belongs in pipeline/engine/host)", strings.Join(bad, ", "))
	}
	// Planted: the host engine runs images in runc, so its graph must be caught.
	if bad := linksRunc(t, module+"/pipeline/engine/host"); !slices.Contains(bad, module+"/pipeline/ocirun") {
		t.Errorf("the host engine's dependencies %q do not show pipeline/ocirun: the check cannot fail", bad)
	}
}

// linksRunc returns the packages among pkg's dependencies (go list -deps) that run
// containers with runc.
func linksRunc(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH (needed for go list -deps): %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", pkg)
	cmd.Dir = testenv.RepoRoot()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, pkg) {
		t.Fatalf("go list -deps %s does not list the package itself: %q", pkg, deps)
	}
	var bad []string
	for _, d := range deps {
		if runcImport(d) {
			bad = append(bad, d)
		}
	}
	return bad
}

// commandImports are the pipeline packages ci may import, each with its reason. The rule is
// a reviewed list, not a count: ci takes a name (a constant, a type, a flag's choices) from
// the package that owns it instead of a re-export through pipeline/forge, so the packages it
// names grow with its vocabulary; what must not grow is the work done in ci. A new import is
// a new line here, with its reason, in a reviewed change; an import ci drops must leave the
// list too, so it stays true.
var commandImports = map[string]string{
	"pipeline/forge":             "a build, ci smoke's expectations, ci manifest's index, the tag rule",
	"pipeline/engine":            "the engine interface newEngine returns (ci build, smoke, pgo-profile)",
	"pipeline/engine/host":       "the host engine and its cache default",
	"pipeline/engine/daggerexec": "the Dagger engine",
	"pipeline/progress":          "the events ci renders (log.go)",
	"pipeline/lock":              "lock paths, loading and writing the lock (ci lock, pgo-profile)",
	"pipeline/plan":              "the optimize modes and module table flags and ci modules show",
	"pipeline/source":            "the download limit's default (--max-source-size); ci lock trust's fetcher, from its --mirror and --keyserver",
	"pipeline/image":             "the revision rule (--revision) of ci tags and ci manifest; the image spellings and --output writer of ci base",
	"pipeline/standin":           "ci base: the stand-in runtime base made from a Debian mirror",
	"pipeline/upstream":          "ci check-updates' flow and the branch calendar a push warns with",
	"pipeline/dockerfile":        "ci dockerfile",
	"pipeline/bench":             "ci bench and ci tune",
	"pipeline/actions":           "GitHub Actions outputs, summaries and annotations",
	"pipeline/safeio":            "named inputs read only as regular files, outputs never through a link, redaction of what is printed",
	"pipeline/smoke":             "the in-engine smoke client's command and flag names, which ci smoke declares and ClientRequest.Args writes",
}

// TestCommandImportsListedPipelinePackages: ci imports only the pipeline packages
// commandImports lists, and each of them.
func TestCommandImportsListedPipelinePackages(t *testing.T) {
	used := map[string]bool{}
	for imp := range walkImports(t, false)["ci"] {
		if strings.HasPrefix(imp, module+"/pipeline/") {
			used[strings.TrimPrefix(imp, module+"/")] = true
		}
	}
	if len(used) == 0 {
		t.Fatal("ci imports no pipeline package: is the walker reading ci/?")
	}
	for _, v := range unlistedImports(used, commandImports) {
		t.Error(v)
	}
	// The check can fail: a planted import of an unlisted package, and a listed one unused.
	planted := map[string]bool{"pipeline/ocirun": true}
	for p := range used {
		planted[p] = true
	}
	delete(planted, "pipeline/bench")
	if got := unlistedImports(planted, commandImports); len(got) != 2 {
		t.Errorf("planted faults not caught: %q", got)
	}
}

// unlistedImports says which of used the list lacks, and which listed packages are unused.
func unlistedImports(used map[string]bool, list map[string]string) []string {
	var out []string
	for p := range used {
		if _, ok := list[p]; !ok {
			out = append(out, "ci imports "+p+", which commandImports does not list: add it with its reason, or move the work into pipeline/forge")
		}
	}
	for p := range list {
		if !used[p] {
			out = append(out, "commandImports lists "+p+", which ci no longer imports: drop the line")
		}
	}
	slices.Sort(out)
	return out
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
	if !all["pipeline/internal/importrules"]["github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"] {
		t.Fatalf("the walker did not see this file's own import of testenv")
	}
	if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), "go.mod")); err != nil {
		t.Fatalf("RepoRoot has no go.mod: %v", err)
	}
}

// testSupportViolations lists the non-test imports of test support (pipeline/testsupport)
// outside it: the program must never link stand-in registries, base images or upstreams.
func testSupportViolations(nonTest map[string]map[string]bool) []string {
	var out []string
	for dir, imps := range nonTest {
		if strings.HasPrefix(dir, "pipeline/testsupport") {
			continue
		}
		for imp := range imps {
			if strings.HasPrefix(imp, module+"/pipeline/testsupport/") {
				out = append(out, dir+" imports "+imp)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestProgramLinksNoTestSupport: only tests (and test support itself) import
// pipeline/testsupport; planted, a product package importing it is reported.
func TestProgramLinksNoTestSupport(t *testing.T) {
	nonTest := walkImports(t, false)
	for _, v := range testSupportViolations(nonTest) {
		t.Errorf("non-test code imports test support: %s", v)
	}
	nonTest["pipeline/forge"][module+"/pipeline/testsupport/registrytest"] = true
	if got := testSupportViolations(nonTest); len(got) != 1 || got[0] != "pipeline/forge imports "+module+"/pipeline/testsupport/registrytest" {
		t.Errorf("planted import of test support reported as %q", got)
	}
}
