package actions

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func workflowDir() string { return filepath.Join(testenv.RepoRoot(), ".github", "workflows") }

func workflowFiles(t *testing.T) []string {
	t.Helper()
	dir := workflowDir()
	var files []string
	for _, pat := range []string{"*.yml", "*.yaml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) < 2 {
		t.Fatalf("found %d workflows in %s, want build.yml and update.yml at least", len(files), dir)
	}
	return files
}

func lint(t *testing.T, files []string) []*actionlint.Error {
	t.Helper()
	opts := &actionlint.LinterOptions{LogWriter: io.Discard}
	// actionlint runs shellcheck over every run: script when it is installed.
	if p, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = p
	} else {
		t.Log("shellcheck is not installed (apt-get install shellcheck): run: scripts are linted without it")
	}
	l, err := actionlint.NewLinter(io.Discard, opts)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFiles(files, nil)
	if err != nil {
		t.Fatalf("linting: %v", err)
	}
	return errs
}

// TestWorkflowsLint runs actionlint over every workflow: any finding fails.
func TestWorkflowsLint(t *testing.T) {
	for _, e := range lint(t, workflowFiles(t)) {
		t.Errorf("%s:%d:%d: %s [%s]", e.Filepath, e.Line, e.Column, e.Message, e.Kind)
	}
}

// TestLintFindsMistakes proves the lint test can fail: a workflow with known mistakes yields
// findings.
func TestLintFindsMistakes(t *testing.T) {
	errs := lint(t, []string{filepath.Join("testdata", "bad-workflow.yml")})
	for _, e := range errs {
		t.Logf("finding: %s [%s]", e.Message, e.Kind)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Message)
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{`property "nope" is not defined`, "potentially untrusted"} {
		if !strings.Contains(joined, want) {
			t.Errorf("findings lack %q:\n%s", want, joined)
		}
	}
}

var (
	usesRE   = regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*([^\s#]+)\s*(#.*)?$`)
	pinnedRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$`)
)

// TestActionsPinnedBySHA: every third-party action is pinned by a full commit SHA and says
// which release that is, so a moved tag cannot change what runs.
func TestActionsPinnedBySHA(t *testing.T) {
	n := 0
	for _, f := range workflowFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range usesRE.FindAllStringSubmatch(string(b), -1) {
			n++
			uses, comment := m[1], m[2]
			if strings.HasPrefix(uses, "./") {
				continue
			}
			if !pinnedRE.MatchString(uses) {
				t.Errorf("%s: %s is not pinned by a full commit SHA", filepath.Base(f), uses)
			}
			if !regexp.MustCompile(`#\s*v[0-9]`).MatchString(comment) {
				t.Errorf("%s: %s has no '# vX.Y.Z' comment naming the pinned release", filepath.Base(f), uses)
			}
		}
	}
	if n < 5 {
		t.Errorf("found only %d uses: lines; is the pattern right?", n)
	}
}

func parse(t *testing.T, file string) *actionlint.Workflow {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	w, errs := actionlint.Parse(b)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", file, errs[0])
	}
	return w
}

func scopes(p *actionlint.Permissions) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	if p.All != nil {
		out["*"] = p.All.Value
	}
	for k, v := range p.Scopes {
		out[k] = v.Value.Value
	}
	return out
}

// TestWorkflowPermissions: read-only defaults; write access only where it is used, with a
// comment saying why; pull requests never get registry credentials; a job that runs project
// code holds no write token but packages: write to push; only a job that runs none of our
// code may sign (see permissionProblems; TestWorkflowRulesCatchMistakes breaks each rule).
func TestWorkflowPermissions(t *testing.T) {
	for _, f := range workflowFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range permissionProblems(filepath.Base(f), string(b), parse(t, f)) {
			t.Error(p)
		}
	}
}

// TestRunScriptsTakeNoExpressions: no workflow expands ${{ }} inside a run: script.
func TestRunScriptsTakeNoExpressions(t *testing.T) {
	for _, f := range workflowFiles(t) {
		for _, p := range runExpressionProblems(filepath.Base(f), parse(t, f)) {
			t.Error(p)
		}
	}
}

// needsNonPR reports whether j depends on a job that never runs for pull requests (so j is
// skipped with it).
func needsNonPR(w *actionlint.Workflow, j *actionlint.Job) bool {
	for _, n := range j.Needs {
		if dep, ok := w.Jobs[strings.ToLower(n.Value)]; ok && dep.If != nil && strings.Contains(dep.If.Value, "!= 'pull_request'") {
			return true
		}
	}
	return false
}

// TestWorkflowToolVersions: Go comes from go.mod and the Dagger CLI matches the SDK in go.mod.
func TestWorkflowToolVersions(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*dagger\.io/dagger v([0-9.]+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod does not require dagger.io/dagger")
	}
	for _, f := range workflowFiles(t) {
		b, _ := os.ReadFile(f)
		s := string(b)
		if strings.Contains(s, "actions/setup-go@") && !strings.Contains(s, "go-version-file: go.mod") {
			t.Errorf("%s: setup-go does not take the Go version from go.mod", filepath.Base(f))
		}
		if strings.Contains(s, "dagger/dagger-for-github@") {
			want := `DAGGER_VERSION: "` + string(m[1]) + `"`
			if !strings.Contains(s, want) {
				t.Errorf("%s: the Dagger CLI is not pinned to the SDK's version (want %s)", filepath.Base(f), want)
			}
		}
	}
}
