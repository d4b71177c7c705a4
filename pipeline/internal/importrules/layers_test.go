package importrules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The import matrix: every package of the module sits in one layer, and a package may import
// a package of its own module only in a layer its layer's row lists. The matrix is the rule,
// not a count: a new package joins a layer (TestImportMatrix fails until it does), and a new
// import is fine exactly when the matrix already allows it; an import the matrix forbids
// means the code is in the wrong place, not that a budget should grow. README's "How it fits
// together" shows the same table.
//
// The rows read bottom up: the shared helpers (pipeline/internal/* among them) use nothing
// above them; the lock and its data; the two things made from the lock (fetched sources, the
// plan); what a build produces and checks (image, smoke suite, provenance, the runc runner);
// the engines that run a plan (and the Dockerfile, a rendering of it); the build pipeline;
// the tools beside the line; the commands; test support.
type layer struct {
	name string
	// packages are directories relative to the repository; a name ending in "/" covers
	// every package under it.
	packages []string
	// mayImport are the layers this layer's packages may import (itself only if listed).
	mayImport []string
}

var layers = []layer{
	{"base", []string{"pipeline/safeio", "pipeline/progress", "pipeline/unpack", "pipeline/gittree", "pipeline/bundle", "pipeline/internal/"},
		[]string{"base"}},
	{"data", []string{"pipeline/lock", "pipeline/advisory"},
		[]string{"base", "data"}},
	{"source", []string{"pipeline/source"},
		[]string{"base", "data"}},
	{"plan", []string{"pipeline/plan"},
		[]string{"base", "data"}},
	{"outputs", []string{"pipeline/image", "pipeline/smoke", "pipeline/sign", "pipeline/ocirun"},
		[]string{"base", "data", "plan"}},
	{"engines", []string{"pipeline/engine", "pipeline/engine/", "pipeline/dockerfile"},
		[]string{"base", "data", "plan", "outputs", "engines"}},
	{"build", []string{"pipeline/forge"},
		[]string{"base", "data", "source", "plan", "outputs", "engines"}},
	{"beside", []string{"pipeline/upstream", "pipeline/bench", "pipeline/actions", "pipeline/standin"},
		[]string{"base", "data", "source", "outputs"}},
	{"commands", []string{"ci", "pipeline/smoke/cmd/"},
		[]string{"base", "data", "source", "plan", "outputs", "engines", "build", "beside"}},
	// Stand-ins and harnesses for tests: they may drive anything but a command, and only
	// tests import them (TestProgramLinksNoTestSupport).
	{"tests", []string{"pipeline/testsupport/", "pipeline/workflowtest", "pipeline/internal/grypestandin", "pipeline/internal/scantest", "pipeline/internal/importrules"},
		[]string{"base", "data", "source", "plan", "outputs", "engines", "build", "beside", "tests"}},
}

// layerOf is the layer of the package at dir: the longest matching entry wins, so
// pipeline/internal/scantest is a test package though pipeline/internal/ is base, and
// pipeline/smoke/cmd/smokeclient a command though pipeline/smoke is an output.
func layerOf(ls []layer, dir string) (string, bool) {
	best, bestLen := "", -1
	for _, l := range ls {
		for _, p := range l.packages {
			match := dir == p || strings.HasSuffix(p, "/") && strings.HasPrefix(dir, p)
			if match && len(p) > bestLen {
				best, bestLen = l.name, len(p)
			}
		}
	}
	return best, bestLen >= 0
}

// matrixViolations lists every import of ours in nonTest (directory -> imports, non-test
// files) that the matrix forbids, and every package that sits in no layer.
func matrixViolations(ls []layer, nonTest map[string]map[string]bool) []string {
	allowed := map[string][]string{}
	for _, l := range ls {
		allowed[l.name] = l.mayImport
	}
	var out []string
	for dir, imps := range nonTest {
		from, ok := layerOf(ls, dir)
		if !ok {
			out = append(out, fmt.Sprintf("%s is in no layer of the import matrix: add it to the row it belongs to (layers_test.go, and README's table)", dir))
			continue
		}
		for imp := range imps {
			rel, ours := strings.CutPrefix(imp, module+"/")
			if !ours || rel == dir {
				continue
			}
			to, ok := layerOf(ls, rel)
			if !ok {
				out = append(out, fmt.Sprintf("%s imports %s, which is in no layer of the import matrix", dir, rel))
				continue
			}
			if !slices.Contains(allowed[from], to) {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): the %s layer may import only %s; move the code to the layer it belongs to, or pass in what it needs",
					dir, from, rel, to, from, strings.Join(allowed[from], ", ")))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestImportMatrix(t *testing.T) {
	nonTest := walkImports(t, false)
	if len(nonTest) < 20 {
		t.Fatalf("found only %d packages: is the walker reading the repository?", len(nonTest))
	}
	for _, v := range matrixViolations(layers, nonTest) {
		t.Error(v)
	}
	// Every layer a row names exists, so a misspelt name cannot quietly allow nothing.
	names := map[string]bool{}
	for _, l := range layers {
		names[l.name] = true
	}
	for _, l := range layers {
		for _, to := range l.mayImport {
			if !names[to] {
				t.Errorf("layer %s may import %q, which is no layer", l.name, to)
			}
		}
	}
}

// TestImportMatrixCanFail plants, one at a time, an import between layers the matrix
// forbids (internal packages included) and a package in no layer, into the real graph, and
// wants exactly that one violation each time; an import the matrix allows adds none.
func TestImportMatrixCanFail(t *testing.T) {
	if v := matrixViolations(layers, walkImports(t, false)); len(v) > 0 {
		t.Fatalf("the real graph breaks the matrix already (TestImportMatrix says how): %q", v)
	}
	cases := []struct {
		dir, imp, want string // want: a part of the one violation
	}{
		{"pipeline/plan", "pipeline/image", "pipeline/plan (plan) imports pipeline/image (outputs)"},
		{"pipeline/plan", "pipeline/source", "pipeline/plan (plan) imports pipeline/source (source)"},
		{"pipeline/lock", "pipeline/plan", "pipeline/lock (data) imports pipeline/plan (plan)"},
		{"pipeline/smoke", "pipeline/image", "pipeline/smoke (outputs) imports pipeline/image (outputs)"},
		{"pipeline/engine/host", "pipeline/forge", "pipeline/engine/host (engines) imports pipeline/forge (build)"},
		{"pipeline/forge", "pipeline/upstream", "pipeline/forge (build) imports pipeline/upstream (beside)"},
		{"pipeline/upstream", "pipeline/forge", "pipeline/upstream (beside) imports pipeline/forge (build)"},
		{"pipeline/bench", "ci", "pipeline/bench (beside) imports ci (commands)"},
		{"pipeline/testsupport/testenv", "ci", "pipeline/testsupport/testenv (tests) imports ci (commands)"},
		{"pipeline/internal/toolbox", "pipeline/lock", "pipeline/internal/toolbox (base) imports pipeline/lock (data)"},
		{"pipeline/internal/registryauth", "pipeline/image", "pipeline/internal/registryauth (base) imports pipeline/image (outputs)"},
		{"pipeline/image", "pipeline/internal/grypestandin", "pipeline/image (outputs) imports pipeline/internal/grypestandin (tests)"},
		{"pipeline/newpkg", "pipeline/safeio", "pipeline/newpkg is in no layer"},
	}
	for _, c := range cases {
		g := walkImports(t, false)
		if g[c.dir] == nil {
			g[c.dir] = map[string]bool{}
		}
		g[c.dir][module+"/"+c.imp] = true
		got := matrixViolations(layers, g)
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("planted %s -> %s: violations %q, want one naming %q", c.dir, c.imp, got, c.want)
		}
	}
	// Allowed imports add nothing: forge may use an output, a command an output.
	g := walkImports(t, false)
	g["pipeline/forge"][module+"/pipeline/ocirun"] = true
	g["ci"][module+"/pipeline/sign"] = true
	if got := matrixViolations(layers, g); len(got) != 0 {
		t.Errorf("imports the matrix allows were reported: %q", got)
	}
}
