//go:build workflows

package workflowtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// build.yml under act, against loopback stand-ins:
//   - dagger/dagger-for-github's download of the Dagger CLI: the Dagger lab's CLI
//     (../shared/lab, v0.21.6 in /usr/local/bin), which the action finds on PATH and keeps;
//     the engine it talks to: the lab's (_EXPERIMENTAL_DAGGER_RUNNER_HOST), whose registry on
//     127.0.0.1:5000 stands in for docker.io for the engine (the builder image);
//   - the upstream downloads: the test locks' real tarballs (.ci/fetch-sources) from a
//     loopback mirror, and gcr.io's distroless base (which ci pulls on the host): the lab's
//     stand-in, both through the repository variable BUILD_INPUT_FLAGS (--mirror,
//     --runtime-image; empty on GitHub);
//   - ghcr.io: a registry process of the test's own on loopback (repository variable
//     REGISTRY), so that what it holds afterwards is this run's doing;
//   - the arm64 runner: none here; the pull request scenarios run the amd64 legs only (act
//     --matrix arch:amd64), and the test says so (the push scenarios, build_push_test.go,
//     run the arm64 legs on this machine under emulation, as build.yml does without
//     ARM64_RUNNER);
//   - the pull request's runc smoke test and vulnerability gate: the push scenarios' stand-in
//     sudo, grype and grype database (build_push_test.go); the shipped locks are the test
//     locks, as in the push scenarios, so that the runc smoke test's --expect-lock (the
//     matrix's lock) is the lock the leg was built from.

// buildRunTimeout bounds one act run of build.yml: the test job (vet and the fast tier), then
// the stack built and smoke-tested in the engine per variant (minutes each when cold).
const buildRunTimeout = 45 * time.Minute

// daggerLab is the lab's engine, started when it was not running (never stopped here: other
// work on the machine may use it).
type daggerLab struct {
	Env []string // the exports of `dagger-lab env`
}

// labRegistry is where the lab serves its stand-in base images.
const labRegistry = "127.0.0.1:5000"

// needDaggerLab returns the running lab, or skips naming why the jobs that need it (jobs
// says which, and what they do with the engine) cannot run (NGINX_FORGE_DAGGER_E2E=1, which
// .ci/test sets when it started a built lab, makes that a failure).
func needDaggerLab(t *testing.T, jobs string) *daggerLab {
	t.Helper()
	script := os.Getenv("NGINX_FORGE_DAGGER_LAB")
	if script == "" {
		script = filepath.Join(testenv.RepoRoot(), "..", "shared", "lab", "dagger-lab")
	}
	dir := os.Getenv("DAGGER_LAB")
	if dir == "" {
		dir = "/opt/dagger-lab"
	}
	why := ""
	switch {
	case !executable(script):
		why = "no Dagger lab script " + script + " (NGINX_FORGE_DAGGER_LAB names another)"
	case !executable(filepath.Join(dir, "bin", "dagger-engine")):
		why = "the Dagger lab is not built (no " + filepath.Join(dir, "bin", "dagger-engine") + "; ../shared/lab/README.md says how)"
	case !executable("/usr/local/bin/dagger"):
		why = "the Dagger lab's CLI /usr/local/bin/dagger is missing (dagger-lab build installs it)"
	}
	if why != "" {
		msg := jobs + " (dagger/dagger-for-github installs the Dagger CLI, whose stand-in here is the Dagger lab's): " + why
		if os.Getenv("NGINX_FORGE_DAGGER_E2E") == "1" {
			t.Fatalf("%s (NGINX_FORGE_DAGGER_E2E=1 makes this a failure)", msg)
		}
		t.Skipf("skipped: %s", msg)
	}
	if out := run(t, "", nil, script, "status"); !strings.Contains(out, "engine: running") || !strings.Contains(out, "registry: running") {
		t.Logf("starting the Dagger lab (%s start; left running)", script)
		run(t, "", nil, script, "start")
	}
	if !hasManifest(labRegistry, "library/ubuntu", "24.04") || !hasManifest(labRegistry, "distroless/base-nossl-debian13", "nonroot") {
		t.Logf("the lab's stand-in base images are missing: %s images", script)
		run(t, "", nil, script, "images")
	}
	l := &daggerLab{}
	for _, line := range strings.Split(run(t, "", nil, script, "env"), "\n") {
		if kv, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			l.Env = append(l.Env, kv)
		}
	}
	if len(l.Env) == 0 {
		t.Fatalf("%s env printed no exports", script)
	}
	return l
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// hasManifest says whether the registry at host answers a manifest for repo:ref.
func hasManifest(host, repo, ref string) bool {
	req, _ := http.NewRequest(http.MethodHead, "http://"+host+"/v2/"+repo+"/manifests/"+ref, nil)
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// registryJSON reads a registry API document; a 404 is nil.
func registryJSON(t *testing.T, url string, v any) bool {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode == http.StatusNotFound {
		return false
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s\n%s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, b)
	}
	return true
}

// registryTags lists every repository of the registry with its tags (none: an empty map).
func registryTags(t *testing.T, host string) map[string][]string {
	t.Helper()
	var cat struct{ Repositories []string }
	registryJSON(t, "http://"+host+"/v2/_catalog?n=1000", &cat)
	out := map[string][]string{}
	for _, r := range cat.Repositories {
		var tags struct{ Tags []string }
		registryJSON(t, "http://"+host+"/v2/"+r+"/tags/list", &tags)
		slices.Sort(tags.Tags)
		out[r] = tags.Tags
	}
	return out
}

// buildFixture is a copy of this checkout, committed on main; its origin names the
// repository (Origin: this project's unless a scenario names a fork), as act reads
// github.repository from it. The builds are pointed at the test locks
// (pipeline/lock/testdata: the tarballs Debian carries, and the AWS-LC variant's archives
// from ../shared/upstream), whose sources are all on the loopback mirror; the scenarios
// that run the runc smoke test also ship them as the locks (shipTestLocks).
type buildFixture struct {
	Repo     string
	Registry *registrytest.Registry
	Mirror   string
	Lab      *daggerLab
	Workflow string // the build.yml act runs (see newBuildFixture)
	// Origin is the repository the fixture's origin remote names (OWNER/NAME), which act
	// gives the workflow as github.repository; ImageRepo is the image's repository in the
	// registry, as build.yml's IMAGE_NAME makes it (OWNER/NAME/nginx).
	Origin, ImageRepo string
}

// buildFixtureOptions: what a scenario changes in the fixture.
type buildFixtureOptions struct {
	// Edit rewrites the copy of build.yml that act runs.
	Edit func(string) string
	// Prepare changes the fixture's files before they are committed.
	Prepare func(repo string)
	// Registry configures the registry that stands in for ghcr.io.
	Registry []registrytest.Option
	// Origin is the repository the fixture's origin names (OWNER/NAME); default this
	// project's, nginx-forge/nginx-forge.
	Origin string
}

func newBuildFixtureWith(t *testing.T, o buildFixtureOptions) *buildFixture {
	t.Helper()
	edit := o.Edit
	lab := needDaggerLab(t, "build.yml's build jobs build on a Dagger engine")
	testenv.SharedUpstream(t) // the AWS-LC variant's archives, laid into the mirror by .ci/fetch-sources
	f := &buildFixture{Lab: lab, Mirror: testenv.Mirror(t), Registry: registrytest.Start(t, o.Registry...)}
	root := testenv.RepoRoot()
	dir := t.TempDir()
	f.Repo = filepath.Join(dir, "repo")
	copyTracked(t, root, f.Repo)
	if o.Prepare != nil {
		o.Prepare(f.Repo)
	}
	// act v0.2.89 validates a workflow against its own schema before it runs any of it, and
	// that schema predates the permission artifact-metadata (GitHub's and actionlint's know
	// it): with it, act refuses the whole of build.yml. act runs a copy outside the checkout
	// without that one line of the attest job (which these scenarios do not run); the
	// checkout keeps build.yml as it is, which the test job's rule tests read.
	b, err := os.ReadFile(filepath.Join(f.Repo, ".github", "workflows", "build.yml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Count(text, actUnknownPermission) != 1 {
		t.Fatalf("build.yml does not have %q once", actUnknownPermission)
	}
	text = strings.Replace(text, actUnknownPermission, "", 1)
	if edit != nil {
		text = edit(text)
	}
	f.Workflow = filepath.Join(dir, "build.yml")
	if err := os.WriteFile(f.Workflow, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, f.Repo, "init", "-q", "-b", "main")
	git(t, f.Repo, "add", "-A")
	git(t, f.Repo, "commit", "-q", "-m", "fixture")
	f.Origin = o.Origin
	if f.Origin == "" {
		f.Origin = "nginx-forge/nginx-forge"
	}
	f.ImageRepo = f.Origin + "/nginx"
	git(t, f.Repo, "remote", "add", "origin", "https://github.com/"+f.Origin+".git")
	return f
}

// actUnknownPermission is the line of build.yml that act's schema refuses (newBuildFixture).
const actUnknownPermission = "      artifact-metadata: write # the storage record the attest actions create for a pushed attestation (create-storage-record)\n"

// vars are the repository variables that point build.yml at the stand-ins: REGISTRY, and
// BUILD_INPUT_FLAGS, ci build's flags per variant (a JSON object).
func (f *buildFixture) vars(t *testing.T) map[string]string {
	t.Helper()
	common := " --mirror " + f.Mirror + " --runtime-image " + labRegistry + "/distroless/base-nossl-debian13:nonroot"
	flags, err := json.Marshal(map[string]string{
		"default": "--lock pipeline/lock/testdata/stack.twin.lock.json" + common,
		"aws-lc":  "--lock pipeline/lock/testdata/aws-lc.twin.lock.json" + common,
	})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"REGISTRY": f.Registry.Host, "BUILD_INPUT_FLAGS": string(flags)}
}

// pullRequestEvent is the event act hands the workflow: a pull request into main.
func pullRequestEvent(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "event.json")
	ev := `{"pull_request":{"number":7,"head":{"ref":"feature"},"base":{"ref":"main"}},"number":7}`
	if err := os.WriteFile(p, []byte(ev), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// amd64Only is how the scenarios restrict the matrix to the legs this machine can run (see
// the top of this file).
var amd64Only = []string{"--matrix", "arch:amd64"}

// prFixture is a build fixture for a pull request: the check legs build, smoke-test under
// runc and scan, with the push scenarios' stand-ins for sudo and grype.
type prFixture struct {
	*buildFixture
	Grype, DBRoot, Bin string
}

// checkNeedsTest is the check job's if: and needs:, the needs: dropped from the act copy: the
// pull request scenarios run the check legs alone (act -j check). The test job (vet and the
// fast tier) reads the shipped locks, which these fixtures replace with the test locks; it
// is the same on every event, and .ci/run runs the same commands.
const checkNeedsTest = "    if: github.event_name == 'pull_request'\n    needs: test\n"

// checkStrategy is the check job's strategy line: its legs run one at a time here, as the
// push scenarios' smoke legs do, since their runc smoke tests share this machine's network
// namespace and the image's ports (on GitHub each leg has a runner of its own).
const checkStrategy = "    name: build, smoke-test and scan (${{ matrix.variant }}, ${{ matrix.arch }})\n    strategy:\n      fail-fast: false\n"

func newPRFixture(t *testing.T, edit func(string) string) *prFixture {
	t.Helper()
	bf := newBuildFixtureWith(t, buildFixtureOptions{
		Prepare: shipTestLocks(t),
		Edit: func(s string) string {
			for _, old := range []string{checkNeedsTest, checkStrategy} {
				if strings.Count(s, old) != 1 {
					t.Fatalf("build.yml's check job does not have %q once", old)
				}
			}
			s = strings.Replace(s, checkNeedsTest, "    if: github.event_name == 'pull_request'\n", 1)
			s = strings.Replace(s, checkStrategy, checkStrategy+"      max-parallel: 1\n", 1)
			if edit != nil {
				s = edit(s)
			}
			return s
		},
	})
	f := &prFixture{buildFixture: bf, Bin: standInBin(t)}
	f.Grype, f.DBRoot = grypeWithDB(t, []advisory{nginxHigh})
	return f
}

// nginxHigh is planted in the pull request scenarios: a fixable High finding on nginx, which
// both variants carry (the SBOM's f5:nginx CPE), listed by the gate and let through.
var nginxHigh = advisory{ID: "CVE-2026-99103", Severity: "High", CPE: "cpe:2.3:a:f5:nginx:*:*:*:*:*:*:*:*", From: "1.0.0", Before: "1.99.0"}

// shipTestLocks makes the fixture's shipped locks the test locks (every source on the
// loopback mirror), so that a build, a runc smoke test's --expect-lock (the matrix's lock)
// and ci tags all read the same lock, as they do on GitHub.
func shipTestLocks(t *testing.T) func(repo string) {
	return func(repo string) {
		for shipped, test := range map[string]string{"stack.lock.json": "stack.twin.lock.json", "aws-lc.lock.json": "aws-lc.twin.lock.json"} {
			b, err := os.ReadFile(filepath.Join(repo, "pipeline", "lock", "testdata", test))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, "pipeline", "lock", shipped), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// grypeEnv points the stand-in grype at its planted database and keeps it offline.
func grypeEnv(dbRoot string) []string {
	return []string{"GRYPE_DB_CACHE_DIR=" + dbRoot, "GRYPE_DB_AUTO_UPDATE=false", "GRYPE_DB_VALIDATE_AGE=false",
		"GRYPE_DB_REQUIRE_UPDATE_CHECK=false", "GRYPE_CHECK_FOR_APP_UPDATE=false"}
}

func (f *prFixture) runPullRequest(t *testing.T) actRun {
	t.Helper()
	t.Logf("build.yml's arm64 legs are not run: the push scenarios run them under emulation (act --matrix arch:amd64)")
	env := append(append(append([]string{}, f.Lab.Env...), "PATH="+f.Bin+string(os.PathListSeparator)+os.Getenv("PATH")), grypeEnv(f.DBRoot)...)
	return runActWith(t, actOptions{Fixture: f.Repo, Workflow: "build.yml", WorkflowFile: f.Workflow, Event: "pull_request",
		Vars: f.vars(t), Env: env, Timeout: buildRunTimeout,
		Args:      append([]string{"--eventpath", pullRequestEvent(t), "-j", "check"}, amd64Only...),
		ToolCache: map[string]map[string]string{"grype": {grypeVersion: f.Grype}}})
}

// legSmoke finds, in act's output, the smoke count that a job's ci build printed: act
// prefixes each line with the job's name ("[build/build, smoke-test and scan (default, amd64)]").
func legSmoke(log, job string) (passed, failed, skipped int, ok bool) {
	re := regexp.MustCompile(`(?m)^\[[^\]]*` + regexp.QuoteMeta(job) + `[^\]]*\].*smoke \(linux/amd64\): (\d+) passed, (\d+) failed, (\d+) skipped`)
	m := re.FindStringSubmatch(log)
	if m == nil {
		return 0, 0, 0, false
	}
	p, _ := strconv.Atoi(m[1])
	fl, _ := strconv.Atoi(m[2])
	s, _ := strconv.Atoi(m[3])
	return p, fl, s, true
}

// pullRequestProblems checks what a pull request's run must leave: each amd64 leg built and
// smoke-tested in the engine (every check passed), smoke-tested again under runc (every
// check run and passed) and through the vulnerability gate (the planted fixable High
// finding listed, not blocking), and nothing in the registry (no tag, no repository).
func pullRequestProblems(t *testing.T, f *prFixture, r actRun) []string {
	t.Helper()
	var problems []string
	for _, variant := range []string{"default", "aws-lc"} {
		job := "build, smoke-test and scan (" + variant + ", amd64)"
		lines := jobLines(r.Log, job)
		ran := stepsSucceeded(lines)
		for _, step := range []string{"Build and smoke-test (no push)", "Smoke-test the built image under runc", "Scan the SBOM with grype", "Gate on fixable critical findings"} {
			if !ran[step] {
				problems = append(problems, fmt.Sprintf("the leg %q did not run %q to success", job, step))
			}
		}
		text := strings.Join(lines, "\n")
		if want := fmt.Sprintf("%d passed, 0 failed, 0 skipped", len(smoke.Checks())); !strings.Contains(text, want) {
			problems = append(problems, fmt.Sprintf("the leg %q: its runc smoke test does not report %q", job, want))
		}
		// The gate's summary lists every finding, the planted High one too (act prints a
		// step summary after the job's prefix on its first line only).
		summary := ""
		if _, after, ok := strings.Cut(r.Log, "Summary - ### Vulnerabilities in the "+variant+" amd64 image's SBOM"); ok {
			summary, _, _ = strings.Cut(after, "\n[")
		}
		if !strings.Contains(summary, "| High | "+nginxHigh.ID+" | nginx |") {
			problems = append(problems, fmt.Sprintf("the leg %q: the vulnerability gate's summary does not list the planted finding %s on nginx", job, nginxHigh.ID))
		}
		p, fl, s, ok := legSmoke(r.Log, job)
		if !ok {
			problems = append(problems, fmt.Sprintf("the leg %q reports no smoke count", job))
		} else if p == 0 || fl != 0 || s != 0 {
			problems = append(problems, fmt.Sprintf("the leg %q: smoke %d passed, %d failed, %d skipped; want every check passed", job, p, fl, s))
		} else {
			t.Logf("the leg %q: %d smoke checks passed in the engine (smoke.Checks has %d)", job, p, len(smoke.Checks()))
		}
	}
	if tags := registryTags(t, f.Registry.Host); len(tags) != 0 {
		problems = append(problems, fmt.Sprintf("the registry holds %v after a pull request's run, want nothing", tags))
	}
	return problems
}

// TestBuildPullRequest: build.yml on a pull request, the gates that protect main: each
// variant built and smoke-tested in the Dagger engine (the amd64 legs), smoke-tested again
// under runc and scanned by the vulnerability gate, the run green, and nothing pushed: the
// registry named by REGISTRY holds no repository and no tag afterwards.
func TestBuildPullRequest(t *testing.T) {
	f := newPRFixture(t, nil)
	r := f.runPullRequest(t)
	if r.Err != nil {
		fail(t, r, "act: %v, want a green run", r.Err)
		return
	}
	for _, p := range pullRequestProblems(t, f, r) {
		fail(t, r, "%s", p)
	}
}

// TestBuildPullRequestThatPushesFails plants a push into the pull request's build (ci build
// --push in the check job): the scenario's registry check must then find the tags it moved.
func TestBuildPullRequestThatPushesFails(t *testing.T) {
	old := `go run ./ci build --platform "$PLATFORM" --image "$IMAGE"`
	f := newPRFixture(t, func(s string) string {
		if strings.Count(s, old) != 1 {
			t.Fatalf("build.yml does not have %q once", old)
		}
		return strings.Replace(s, old, `go run ./ci build --push --platform "$PLATFORM" --image "$IMAGE"`, 1)
	})
	r := f.runPullRequest(t)
	problems := pullRequestProblems(t, f, r)
	found := false
	for _, p := range problems {
		found = found || strings.HasPrefix(p, "the registry holds ")
	}
	if !found {
		fail(t, r, "with --push planted in the pull request's build, the scenario finds no tag in the registry (problems: %q; act: %v)", problems, r.Err)
	}
}
