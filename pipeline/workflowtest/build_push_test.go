//go:build workflows

package workflowtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/rhysd/actionlint"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// build.yml on a push to main under act: every job after test (build, smoke, scan, merge,
// attest; the test job is the pull request scenario's, unchanged by the event), all four
// legs, against these stand-ins beside the pull request's (build_test.go):
//   - the repository: a fork, forkOrigin (the fixture's origin remote, which act gives the
//     workflow as github.repository), so that what names the repository (the image's
//     repository, its source label, the provenance) is seen to come from where it runs;
//   - the registry: the test's registry process on loopback, named by the repository
//     variable REGISTRY, which requires the login the workflow does (docker/login-action
//     runs the docker CLI, whose login is checked client-side when no Docker daemon
//     answers): user forkRegistryUser (the variable REGISTRY_USERNAME), password
//     forkRegistryPassword (the secret REGISTRY_PASSWORD), neither of them github.actor or
//     GITHUB_TOKEN; the jobs share one Docker config here (one runner per job on GitHub), so
//     a docker wrapper skips the action's post-job logout, which would log out the jobs
//     still pushing;
//   - the arm64 runner: none (no ARM64_RUNNER): the arm64 legs run on this amd64 machine as
//     on GitHub's amd64 runners, the Dagger engine cross-compiling them and smoke-testing
//     them under qemu-user, and the runc smoke job running the arm64 digest under qemu-user
//     (binfmt_misc, which the workflow's emulation step finds registered);
//   - the shipped locks: the fixture's pipeline/lock/stack.lock.json and aws-lc.lock.json are
//     the test locks (every source on the loopback mirror), so that the build, the runc
//     smoke test's --expect-lock (the matrix's lock) and ci tags all read the same lock, as
//     they do on GitHub;
//   - gcr.io's distroless base, both platforms: the stand-in bases (basetest, Debian trixie's
//     amd64 and arm64 packages) pushed as one index to a second loopback registry, given to
//     ci build as --runtime-image through BUILD_INPUT_FLAGS;
//   - grype's download (anchore/scan-action v7.4.0 installs grype v0.110.0 from GitHub): the
//     grype CLI of that release built from the Go module proxy
//     (pipeline/internal/grypestandin), put in act's tool cache where the action looks first;
//     its database (downloaded from Anchore): one built by that grype's own builder from
//     planted advisories (GRYPE_DB_CACHE_DIR, no update);
//   - sudo: this runner already runs as root and has no sudo; a stand-in on PATH runs its
//     command (after NAME=VALUE assignments), as GitHub's passwordless sudo does;
//   - signing: TestBuildPushToMain is a private repository's run (SIGNING_MODE key): cosign's
//     own key pair (cosign generate-key-pair) in the secrets COSIGN_PRIVATE_KEY and
//     COSIGN_PASSWORD; every image and index signed and attested with it, the attest job not
//     run, and the merge summary saying so. The other push scenarios sign keylessly, as a
//     public repository does, where the OIDC token (keyless cosign, the attest actions) is
//     none here: the repository variable KEYLESS_SKIP_REASON skips exactly those steps, and
//     the run says why.

// pushActor is github.actor of the push (act --actor); not the registry's user.
const pushActor = "forge-maintainer"

// forkOrigin is the repository the push scenarios run in: not this project's.
const forkOrigin = "acme/edge-nginx"

// forkRegistryUser and forkRegistryPassword are the registry's only login: the variable
// REGISTRY_USERNAME and the secret REGISTRY_PASSWORD (not a secret: a stand-in's).
const (
	forkRegistryUser     = "edge-bot"
	forkRegistryPassword = "stand-in-registry-password"
)

// keylessSkipReason is KEYLESS_SKIP_REASON in these runs.
const keylessSkipReason = "the workflow tier runs under act, which has no GitHub OIDC token service"

// keylessSteps are the attest job's steps that need the OIDC token (and the cosign install
// only they use): skipped here, every other step of every job runs.
var keylessSteps = []string{"Install cosign", "Sign the index and attest its SBOMs (keyless)",
	"Attest build provenance of the index", "Attest the linux/amd64 SBOM", "Attest the linux/arm64 SBOM"}

// grypeVersion is the grype anchore/scan-action v7.4.0 installs (its GrypeVersion.js), the
// version pipeline/internal/grypestandin's go.mod requires; checkGrypeVersion fails when the
// pinned action, the go.mod or this constant disagree (a Dependabot bump of the action).
const grypeVersion = "0.110.0"

// checkGrypeVersion compares grypeVersion with the grype the pinned scan-action installs
// (GrypeVersion.js of its prepared copy) and the one grypestandin's go.mod requires.
func checkGrypeVersion(t *testing.T, workflow string) {
	t.Helper()
	var action string
	for _, m := range usesRE.FindAllStringSubmatch(workflow, -1) {
		if m[1] == "anchore" && m[2] == "scan-action" {
			action = filepath.Join(actionsDir(t), m[1]+"+"+m[2]+"@"+m[3])
		}
	}
	if action == "" {
		t.Fatal("build.yml uses no anchore/scan-action: the scan scenarios' stand-in grype has nothing to stand in for")
	}
	js, err := os.ReadFile(filepath.Join(action, "GrypeVersion.js"))
	if err != nil {
		t.Fatalf("the pinned scan-action's grype version: %v", err)
	}
	if want := `GRYPE_VERSION = "v` + grypeVersion + `"`; !strings.Contains(string(js), want) {
		t.Fatalf("%s/GrypeVersion.js says %q, not %s: build the stand-in grype at the action's version (pipeline/internal/grypestandin/go.mod and grypeVersion)", action, strings.TrimSpace(string(js)), want)
	}
	mod, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "pipeline", "internal", "grypestandin", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*(require\s+)?github\.com/anchore/grype v` + regexp.QuoteMeta(grypeVersion) + `\s*$`).Match(mod) {
		t.Fatalf("pipeline/internal/grypestandin/go.mod does not require github.com/anchore/grype v%s, the grype the pinned scan-action installs", grypeVersion)
	}
}

// variantFlags are build.yml's matrix flags per variant.
var variantFlags = map[string][]string{"default": nil, "aws-lc": {"--tls", "aws-lc", "--zlib", "zlib-ng"}}

// pushFixture is a build fixture for a push to main.
type pushFixture struct {
	*buildFixture
	Base     string // the two-platform runtime base, REPO@sha256:...
	KeyDir   string // cosign.key and cosign.pub
	Grype    string // the grype CLI
	DBRoot   string // GRYPE_DB_CACHE_DIR
	Bin      string // the directory of the stand-in sudo and docker, first on PATH
	Home     string // HOME of the run (the Docker config the login writes)
	Revision string // the fixture's commit (github.sha)
	KeyMode  bool   // pushOptions.KeyMode

	leavesTmp bool // pushOptions.LeavesTmp
}

// advisory is a planted record: NVD's for a CPE range, or Debian 13's for a source package.
type advisory struct {
	ID, Severity string
	// NVD: the CPE product and the affected range.
	CPE, From, Before string
	// Debian: the source package and the fixed version.
	Source, Fixed string
}

// libcHigh is planted in every push scenario: a fixable High finding on the base's glibc,
// which the gate lists and lets through (it stops only fixable critical ones).
var libcHigh = advisory{ID: "CVE-2026-99102", Severity: "High", Source: "glibc", Fixed: "2.41-99"}

// opensslCritical is the critical OpenSSL flaw with a fix that only the default variant
// carries (the test lock's OpenSSL 3.5.7; the AWS-LC variant has no OpenSSL).
var opensslCritical = advisory{ID: "CVE-2026-99101", Severity: "Critical", CPE: "cpe:2.3:a:openssl:openssl:*:*:*:*:*:*:*:*", From: "3.5.0", Before: "3.5.8"}

// pushOptions is what a push scenario changes.
type pushOptions struct {
	Edit       func(string) string // the act copy of build.yml
	Advisories []advisory
	// LeavesTmp: the scenario plants a job that leaves files in the run's TMPDIR, and
	// checks actRun.LeftInTmp itself.
	LeavesTmp bool
	// KeyMode: a private repository's run, signed with a key from the secrets
	// (SIGNING_MODE key), not keylessly.
	KeyMode bool
}

func newPushFixture(t *testing.T, o pushOptions) *pushFixture {
	t.Helper()
	if _, err := exec.LookPath("cosign"); err != nil {
		testenv.Missing(t, "the command cosign", "run .ci/install-deps as root (cosign v2.6.1)")
	}
	if _, err := os.Stat("/proc/sys/fs/binfmt_misc/qemu-aarch64"); err != nil {
		testenv.Missing(t, "arm64 emulation (binfmt_misc qemu-aarch64) for the arm64 legs", "run .ci/install-deps as root")
	}
	// The test job is left out (act -j attest runs attest and the jobs it needs): it is the
	// same on every event, and the pull request scenario runs it.
	needsTest := "    if: github.event_name != 'pull_request'\n    needs: test\n"
	bf := newBuildFixtureWith(t, buildFixtureOptions{
		Registry: []registrytest.Option{registrytest.WithBasicAuth(forkRegistryUser, forkRegistryPassword)},
		Origin:   forkOrigin,
		Prepare:  shipTestLocks(t),
		Edit: func(s string) string {
			if strings.Count(s, needsTest) != 1 {
				t.Fatalf("build.yml's build job does not have %q once", needsTest)
			}
			s = strings.Replace(s, needsTest, "    if: github.event_name != 'pull_request'\n", 1)
			// The runc smoke legs run one at a time: on GitHub each has a runner of its own,
			// here they share one network namespace, and the image's ports (8080, 8443) with
			// it (found by running them together: "bind() ... Address already in use").
			smokeStrategy := "    name: smoke-test the pushed digest under runc (${{ matrix.variant }}, ${{ matrix.arch }})\n    strategy:\n      fail-fast: false\n"
			if strings.Count(s, smokeStrategy) != 1 {
				t.Fatalf("build.yml's smoke job does not have %q once", smokeStrategy)
			}
			s = strings.Replace(s, smokeStrategy, smokeStrategy+"      max-parallel: 1\n", 1)
			if o.Edit != nil {
				s = o.Edit(s)
			}
			return s
		},
	})
	f := &pushFixture{buildFixture: bf, leavesTmp: o.LeavesTmp, KeyMode: o.KeyMode}
	wf, err := os.ReadFile(f.Workflow)
	if err != nil {
		t.Fatal(err)
	}
	checkGrypeVersion(t, string(wf))
	f.Revision = strings.TrimSpace(git(t, f.Repo, "rev-parse", "HEAD"))
	f.Base = pushTwoPlatformBase(t)
	f.KeyDir = t.TempDir()
	cmd := exec.Command("cosign", "generate-key-pair")
	cmd.Dir = f.KeyDir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+cosignPassword, "HOME="+f.KeyDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	f.Grype, f.DBRoot = grypeWithDB(t, o.Advisories)
	f.Bin = standInBin(t)
	f.Home = t.TempDir()
	return f
}

// cosignPassword unlocks the test's cosign.key (COSIGN_PASSWORD, as cosign and ci build read it).
const cosignPassword = "workflow tier key"

// pushTwoPlatformBase pushes the stand-in distroless base as an index of linux/amd64
// (Docker-typed, as the lab's own) and linux/arm64/v8 to a registry of its own on loopback
// (so that the registry standing in for ghcr.io holds only what the run pushed), and returns
// its digest reference.
func pushTwoPlatformBase(t *testing.T) string {
	t.Helper()
	reg := registrytest.Start(t)
	amd64 := basetest.DockerTypedFor(t, basetest.Options{})
	arm64, _ := basetest.For(t, basetest.Options{Arch: "arm64"})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
	)
	ref, err := name.ParseReference(reg.Host + "/distroless/base-nossl-debian13:two-platform")
	if err != nil {
		t.Fatal(err)
	}
	if err := ggcrremote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("pushing the two-platform stand-in base: %v", err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String()).String()
}

// standInBin writes the stand-in sudo and the docker wrapper and returns their directory,
// for the front of PATH.
func standInBin(t *testing.T) string {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err != nil {
		testenv.Missing(t, "the docker CLI (docker/login-action runs it)", "apt-get install docker-cli (no daemon needed)")
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root (build.yml's smoke job runs runc through sudo; the stand-in sudo runs as the runner's root)", "run the workflow tier as root (sudo .ci/test)")
	}
	dir := t.TempDir()
	script := `#!/bin/sh
# Stand-in for sudo in the workflow tier (pipeline/workflowtest): the runner already runs
# as root, as GitHub's runner user may become root without a password. NAME=VALUE
# arguments before the command go to its environment, as sudo passes them.
set -e
[ "$(id -u)" = 0 ] || { echo "stand-in sudo: not root" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    *=*) export "$1"; shift ;;
    *) break ;;
  esac
done
exec "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "sudo"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every job of the run shares this machine's Docker config (one HOME), where on GitHub
	// each job has a runner of its own: docker/login-action's post-job logout would log out
	// the jobs still pushing (found by running it: 401 in the middle of a push). That logout
	// is skipped, and says so; every other command goes to the real docker.
	wrapper := `#!/bin/sh
# Stand-in wrapper of the docker CLI in the workflow tier (pipeline/workflowtest).
if [ "$1" = logout ]; then
  echo "stand-in docker: 'docker $*' skipped: the jobs of this run share one Docker config, and others may still be pushing"
  exit 0
fi
exec ` + docker + ` "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// grypeTools builds, once per test binary, the grype CLI at grypeVersion and the stand-in
// database builder, both from pipeline/internal/grypestandin (its go.mod pins that grype):
// the first build downloads grype's modules and takes minutes, later ones come from Go's
// caches.
var grypeTools struct {
	once       sync.Once
	dir        string
	cli, build string
	err        error
}

func grypeWithDB(t *testing.T, planted []advisory) (cli, dbRoot string) {
	t.Helper()
	grypeTools.once.Do(func() {
		dir, err := os.MkdirTemp("", "workflowtest-grype-")
		if err != nil {
			grypeTools.err = err
			return
		}
		grypeTools.dir = dir
		mod := filepath.Join(testenv.RepoRoot(), "pipeline", "internal", "grypestandin")
		start := time.Now()
		for _, b := range [][]string{
			{"build", "-trimpath", "-ldflags", "-X main.version=" + grypeVersion, "-o", filepath.Join(dir, "grype"), "github.com/anchore/grype/cmd/grype"},
			{"build", "-trimpath", "-o", filepath.Join(dir, "grypestandin"), "."},
		} {
			cmd := exec.Command("go", b...)
			cmd.Dir = mod
			cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local")
			if out, err := cmd.CombinedOutput(); err != nil {
				grypeTools.err = fmt.Errorf("go %s in %s: %w\n%s", strings.Join(b, " "), mod, err, out)
				return
			}
		}
		grypeTools.cli, grypeTools.build = filepath.Join(dir, "grype"), filepath.Join(dir, "grypestandin")
		t.Logf("built grype v%s and the stand-in database builder (pipeline/internal/grypestandin) in %s", grypeVersion, time.Since(start).Round(time.Second))
	})
	if grypeTools.err != nil {
		t.Fatalf("the stand-in grype: %v", grypeTools.err)
	}
	records := t.TempDir()
	for _, a := range planted {
		a.write(t, records)
	}
	dbRoot = t.TempDir()
	if out, err := exec.Command(grypeTools.build, "-records", records, "-db", dbRoot).CombinedOutput(); err != nil {
		t.Fatalf("grypestandin: %v\n%s", err, out)
	}
	return grypeTools.cli, dbRoot
}

// write lays the advisory out as grype's provider (vunnel) writes it.
func (a advisory) write(t *testing.T, dir string) {
	t.Helper()
	id := strings.ToLower(a.ID)
	if a.CPE != "" {
		// grype rates an NVD record by its CVSS base score: a High one gets a High score.
		score, vector := 9.8, "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"
		if a.Severity == "High" {
			score, vector = 7.5, "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H"
		}
		match := map[string]any{"criteria": a.CPE, "vulnerable": true,
			"matchCriteriaId":       "00000000-0000-4000-8000-" + strings.ReplaceAll(strings.TrimPrefix(a.ID, "CVE-"), "-", ""),
			"versionStartIncluding": a.From, "versionEndExcluding": a.Before}
		writeJSONFile(t, filepath.Join(dir, "nvd", "results", "2026", id+".json"), map[string]any{
			"identifier": "2026/" + id,
			"schema":     "https://raw.githubusercontent.com/anchore/vunnel/main/schema/vulnerability/nvd/schema-1.0.0.json",
			"item": map[string]any{"cve": map[string]any{
				"id": a.ID, "published": "2026-11-01T00:00:00.000", "lastModified": "2026-11-02T00:00:00.000",
				"sourceIdentifier": "stand-in@example.invalid", "vulnStatus": "Analyzed",
				"descriptions": []any{map[string]any{"lang": "en", "value": "planted by the workflow tier"}},
				"metrics": map[string]any{"cvssMetricV31": []any{map[string]any{
					"cvssData": map[string]any{"version": "3.1", "baseScore": score, "baseSeverity": strings.ToUpper(a.Severity),
						"vectorString": vector,
						"attackVector": "NETWORK", "attackComplexity": "LOW", "privilegesRequired": "NONE", "userInteraction": "NONE",
						"scope": "UNCHANGED", "confidentialityImpact": "HIGH", "integrityImpact": "HIGH", "availabilityImpact": "HIGH"},
					"exploitabilityScore": 3.9, "impactScore": 5.9, "source": "nvd@nist.gov", "type": "Primary"}}},
				"configurations": []any{map[string]any{"nodes": []any{map[string]any{"operator": "OR", "negate": false, "cpeMatch": []any{match}}}}},
				"references":     []any{},
			}},
		})
		return
	}
	writeJSONFile(t, filepath.Join(dir, "debian", "results", "debian-13", id+".json"), map[string]any{
		"identifier": "debian:13/" + id,
		"schema":     "https://raw.githubusercontent.com/anchore/vunnel/main/schema/vulnerability/os/schema-1.1.0.json",
		"item": map[string]any{"Vulnerability": map[string]any{
			"Name": a.ID, "NamespaceName": "debian:13", "Severity": a.Severity,
			"Link": "https://security-tracker.debian.org/tracker/" + a.ID, "Description": "planted by the workflow tier",
			"CVSS": []any{}, "Metadata": map[string]any{},
			"FixedIn": []any{map[string]any{"Name": a.Source, "NamespaceName": "debian:13", "Version": a.Fixed, "VersionFormat": "dpkg",
				"VendorAdvisory": map[string]any{"AdvisorySummary": []any{}, "NoAdvisory": false}}},
		}},
	})
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pushVars: the stand-ins' repository variables for a push (see the top of this file).
func (f *pushFixture) vars(t *testing.T) map[string]string {
	t.Helper()
	common := "--mirror " + f.Mirror + " --runtime-image " + f.Base
	flags, err := json.Marshal(map[string]string{"default": common, "aws-lc": common})
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]string{"REGISTRY": f.Registry.Host, "REGISTRY_USERNAME": forkRegistryUser, "BUILD_INPUT_FLAGS": string(flags)}
	if f.KeyMode {
		v["SIGNING_MODE"] = "key"
	} else {
		v["KEYLESS_SKIP_REASON"] = keylessSkipReason
	}
	return v
}

// secrets: the registry's password and, in key mode, the signing key and its password.
func (f *pushFixture) secrets(t *testing.T) map[string]string {
	t.Helper()
	s := map[string]string{"REGISTRY_PASSWORD": forkRegistryPassword}
	if f.KeyMode {
		key, err := os.ReadFile(filepath.Join(f.KeyDir, "cosign.key"))
		if err != nil {
			t.Fatal(err)
		}
		s["COSIGN_PRIVATE_KEY"] = string(key)
		s["COSIGN_PASSWORD"] = cosignPassword
	}
	return s
}

// runPush runs build.yml on a push to main (the fixture's main: github.ref refs/heads/main,
// github.sha its commit), every job but test.
func (f *pushFixture) runPush(t *testing.T) actRun {
	t.Helper()
	t.Logf("build.yml's arm64 legs run on this amd64 machine (no ARM64_RUNNER): cross-compiled in the engine, smoke-tested under qemu-user")
	env := append(append([]string{}, f.Lab.Env...),
		"PATH="+f.Bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		// The login's Docker config goes to the run's own HOME, not the machine's.
		"HOME="+f.Home)
	env = append(env, grypeEnv(f.DBRoot)...)
	return runActWith(t, actOptions{Fixture: f.Repo, Workflow: "build.yml", WorkflowFile: f.Workflow, Event: "push",
		Vars: f.vars(t), Secrets: f.secrets(t), Env: env, Timeout: buildRunTimeout,
		Args:      []string{"-j", "attest", "--actor", pushActor},
		ToolCache: map[string]map[string]string{"grype": {grypeVersion: f.Grype}},
		LeavesTmp: f.leavesTmp})
}

// ciTags is what `ci tags` says for the push of variant (the real command, in the fixture).
func (f *pushFixture) ciTags(t *testing.T, variant string) []string {
	t.Helper()
	args := append([]string{"run", "./ci", "tags", "--ref", "refs/heads/main", "--revision", f.Revision}, variantFlags[variant]...)
	out := run(t, f.Repo, []string{"GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local"}, "go", args...)
	tags := strings.Split(strings.TrimSpace(out), ",")
	sort.Strings(tags)
	return tags
}

// registryState is what the registry holds after a run.
type registryState struct {
	Repos []string
	Tags  map[string]string // tag of the image repository -> digest
	repo  name.Repository
	auth  ggcrremote.Option
	// imageRepo is the image's repository in the registry (OWNER/NAME/nginx).
	imageRepo string
}

func (f *pushFixture) state(t *testing.T) registryState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	auth := ggcrremote.WithAuth(&authn.Basic{Username: forkRegistryUser, Password: forkRegistryPassword})
	reg, err := name.NewRegistry(f.Registry.Host)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := ggcrremote.Catalog(ctx, reg, auth)
	if err != nil {
		t.Fatalf("listing %s: %v", f.Registry.Host, err)
	}
	sort.Strings(repos)
	repo, err := name.NewRepository(f.Registry.Host + "/" + f.ImageRepo)
	if err != nil {
		t.Fatal(err)
	}
	s := registryState{Repos: repos, Tags: map[string]string{}, repo: repo, auth: auth, imageRepo: f.ImageRepo}
	if !slices.Contains(repos, f.ImageRepo) {
		return s
	}
	tags, err := ggcrremote.List(repo, auth, ggcrremote.WithContext(ctx))
	if err != nil {
		t.Fatalf("listing the tags of %s: %v", repo, err)
	}
	for _, tag := range tags {
		d, err := ggcrremote.Head(repo.Tag(tag), auth, ggcrremote.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s:%s: %v", repo, tag, err)
		}
		s.Tags[tag] = d.Digest.String()
	}
	return s
}

// index reads the index at digest: platform -> image digest.
func (s registryState) index(t *testing.T, digest string) (map[string]string, error) {
	t.Helper()
	idx, err := ggcrremote.Index(s.repo.Digest(digest), s.auth)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("index %s: entry %s has no platform", digest, d.Digest)
		}
		out[d.Platform.OS+"/"+d.Platform.Architecture] = d.Digest.String()
	}
	return out, nil
}

// jobLines are the lines act printed for one job, given its display name with the matrix
// values filled in: act prefixes each line with "[WORKFLOW/NAME]", NAME suffixed -N for a
// matrix leg and padded with spaces to the longest name of the stage.
func jobLines(log, job string) []string {
	var out []string
	prefix := regexp.MustCompile(`^\[build/` + regexp.QuoteMeta(job) + `(-[0-9]+)? *\]`)
	for _, l := range strings.Split(log, "\n") {
		if prefix.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// stepsSucceeded are the steps act reports as succeeded in a job's lines.
func stepsSucceeded(lines []string) map[string]bool {
	re := regexp.MustCompile(`✅  Success - Main (.*) \[[^\]]*\]\s*$`)
	out := map[string]bool{}
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// workflowSteps are the steps of each job of the act copy, as act names them in its log
// (the name, else the uses: of the step).
func workflowSteps(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w, errs := actionlint.Parse(b)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", path, errs[0])
	}
	out := map[string][]string{}
	for id, j := range w.Jobs {
		for _, s := range j.Steps {
			switch {
			case s.Name != nil:
				out[id] = append(out[id], s.Name.Value)
			default:
				if a, ok := s.Exec.(*actionlint.ExecAction); ok {
					out[id] = append(out[id], a.Uses.Value)
				}
			}
		}
	}
	return out
}

// legJobs are the display names of the jobs a push runs per variant (see build.yml).
func legJobs(variant string) map[string][]string {
	out := map[string][]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		out["build"] = append(out["build"], "build, smoke-test and push ("+variant+", "+arch+")")
		out["smoke"] = append(out["smoke"], "smoke-test the pushed digest under runc ("+variant+", "+arch+")")
		out["scan"] = append(out["scan"], "vulnerability gate ("+variant+", "+arch+")")
	}
	out["merge"] = []string{"multi-platform index and tags (" + variant + ")"}
	out["attest"] = []string{"attest provenance and SBOMs (" + variant + ")"}
	return out
}

// published checks what a variant that passed every gate leaves: its tags are exactly what
// ci tags says, all on one index of exactly two platforms, each platform image smoke-tested
// under runc with every check passed, the SBOM referrer of each image present, and with a
// key configured, each image's signature and attestations (cosign verify --key accepts
// them); every step of its jobs ran, but for the keyless ones, skipped with the reason.
// It returns the variant's image digests.
func (f *pushFixture) published(t *testing.T, r actRun, s registryState, variant string) (legs []string, problems []string) {
	t.Helper()
	signed := f.KeyMode
	add := func(format string, a ...any) { problems = append(problems, variant+": "+fmt.Sprintf(format, a...)) }
	want := f.ciTags(t, variant)
	index := ""
	for _, tag := range want {
		d, ok := s.Tags[tag]
		switch {
		case !ok:
			add("ci tags says %s, which the registry does not have", tag)
		case index == "":
			index = d
		case d != index:
			add("the tag %s is on %s, another of its tags on %s: the tags did not move together", tag, d, index)
		}
	}
	if index == "" {
		return nil, problems
	}
	platforms, err := s.index(t, index)
	if err != nil {
		add("the tags are not on an index: %v", err)
		return nil, problems
	}
	if len(platforms) != 2 || platforms["linux/amd64"] == "" || platforms["linux/arm64"] == "" {
		add("the index %s holds %v, want exactly linux/amd64 and linux/arm64", index, platforms)
	}
	// In key mode the index the tags name is signed with the key too (merge's ci manifest
	// --sign-key),
	// and attested with the platforms' SBOMs: a verifier resolves a tag to the index.
	ihex := strings.TrimPrefix(index, "sha256:")
	_, isig := s.Tags["sha256-"+ihex+".sig"]
	_, iatt := s.Tags["sha256-"+ihex+".att"]
	if signed != isig || signed != iatt {
		add("the index %s: signature %v, attestations %v; want %v (a key is configured for this variant: %v)", index, isig, iatt, signed, signed)
	}
	if signed && isig {
		f.cosignVerify(t, s.repo.Digest(index).String(), &problems)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		d := platforms["linux/"+arch]
		if d == "" {
			continue
		}
		legs = append(legs, d)
		hex := strings.TrimPrefix(d, "sha256:")
		if _, ok := s.Tags["sha256-"+hex]; !ok {
			add("the %s image %s has no SBOM referrer (tag sha256-%s)", arch, d, hex)
		}
		_, sig := s.Tags["sha256-"+hex+".sig"]
		_, att := s.Tags["sha256-"+hex+".att"]
		if signed != sig || signed != att {
			add("the %s image %s: signature %v, attestations %v; want %v (a key is configured for this variant: %v)", arch, d, sig, att, signed, signed)
		}
		if signed && sig {
			f.cosignVerify(t, s.repo.Digest(d).String(), &problems)
			for _, p := range f.provenanceNamesFork(t, s.repo.Digest(d).String()) {
				add("the %s image %s: %s", arch, d, p)
			}
		}
		for _, p := range f.labelsNameFork(t, s, d) {
			add("the %s image %s: %s", arch, d, p)
		}
		smokeJob := "smoke-test the pushed digest under runc (" + variant + ", " + arch + ")"
		lines := strings.Join(jobLines(r.Log, smokeJob), "\n")
		want := fmt.Sprintf("%d passed, 0 failed, 0 skipped", len(smoke.Checks()))
		if !strings.Contains(lines, want) {
			add("the job %q does not report %q", smokeJob, want)
		}
		if !strings.Contains(lines, s.repo.String()+"@"+d) {
			add("the job %q does not name the published image %s", smokeJob, d)
		}
	}
	steps := workflowSteps(t, f.Workflow)
	for id, jobs := range legJobs(variant) {
		for _, job := range jobs {
			lines := jobLines(r.Log, job)
			if id == "attest" && f.KeyMode {
				if len(lines) > 0 {
					add("the job %q ran, though SIGNING_MODE key signs and attests in merge", job)
				}
				continue
			}
			ran := stepsSucceeded(lines)
			for _, step := range steps[id] {
				keyless := id == "attest" && slices.Contains(keylessSteps, step)
				// Skipped by design: the arm64 step on an amd64 leg, the key's steps when
				// signing keylessly.
				skips := (step == "arm64 runner or emulation" && strings.HasSuffix(job, ", amd64)")) ||
					(!f.KeyMode && (step == "Write the signing key" || step == "Remove the signing key"))
				switch {
				case keyless && ran[step]:
					add("the job %q ran %q, which needs GitHub's OIDC token: KEYLESS_SKIP_REASON should skip it", job, step)
				case skips && ran[step]:
					add("the job %q ran %q, which this run should skip", job, step)
				case !keyless && !skips && !ran[step]:
					add("the job %q did not run %q to success (only the keyless steps, the key's steps without a key and the arm64 step of an amd64 leg may be skipped)", job, step)
				}
			}
		}
	}
	// What the run says (the step summaries, which act prints): how arm64 ran, and which
	// signing mode published the variant.
	if want := "linux/arm64: cross-compiled on this amd64 runner and smoke-tested under qemu-user emulation (no ARM64_RUNNER)"; !strings.Contains(r.Log, want) {
		add("the run does not say %q", want)
	}
	if f.KeyMode {
		// act prints a step summary after the job's prefix on its first line only: the
		// merge summary is read from its heading on.
		summary := ""
		if _, after, ok := strings.Cut(r.Log, "Summary - ### Published ("+variant+")"); ok {
			summary, _, _ = strings.Cut(after, "\n[")
		}
		if want := "signing: key (SIGNING_MODE key)"; !strings.Contains(summary, want) {
			add("the merge job's summary does not say %q", want)
		}
	} else {
		attest := strings.Join(jobLines(r.Log, "attest provenance and SBOMs ("+variant+")"), "\n")
		if !strings.Contains(attest, keylessSkipReason) {
			add("the attest job does not say why the keyless steps were skipped (%q)", keylessSkipReason)
		}
	}
	return legs, problems
}

// forkRepositoryURL is the repository the fork's images and provenance must name.
const forkRepositoryURL = "https://github.com/" + forkOrigin

// labelsNameFork: the image's source label names the fork and its revision label the
// commit built.
func (f *pushFixture) labelsNameFork(t *testing.T, s registryState, digest string) []string {
	t.Helper()
	img, err := ggcrremote.Image(s.repo.Digest(digest), s.auth)
	if err != nil {
		return []string{fmt.Sprintf("reading the image: %v", err)}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return []string{fmt.Sprintf("reading its config: %v", err)}
	}
	var problems []string
	for label, want := range map[string]string{"org.opencontainers.image.source": forkRepositoryURL, "org.opencontainers.image.revision": f.Revision} {
		if got := cfg.Config.Labels[label]; got != want {
			problems = append(problems, fmt.Sprintf("label %s is %q, want %q", label, got, want))
		}
	}
	return problems
}

// provenanceNamesFork: the image's key-signed SLSA provenance (cosign verify-attestation
// under the test's public key) names the fork as its builder's repository and records the
// fork's revision.
func (f *pushFixture) provenanceNamesFork(t *testing.T, ref string) []string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("cosign", "verify-attestation", "--type", "slsaprovenance1", "--key", filepath.Join(f.KeyDir, "cosign.pub"),
		"--insecure-ignore-tlog=true", "--allow-insecure-registry", ref)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+f.Registry.DockerConfig(t), "TUF_ROOT="+filepath.Join(home, "tuf"),
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
	out, err := cmd.Output()
	if err != nil {
		return []string{fmt.Sprintf("cosign verify-attestation --type slsaprovenance1: %v", err)}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var env struct{ Payload []byte }
		if json.Unmarshal([]byte(line), &env) != nil {
			continue
		}
		var st struct {
			PredicateType string
			Predicate     struct {
				BuildDefinition struct {
					ResolvedDependencies []struct {
						URI    string
						Name   string
						Digest map[string]string
					}
				}
				RunDetails struct{ Builder struct{ ID string } }
			}
		}
		if json.Unmarshal(env.Payload, &st) != nil || st.PredicateType != "https://slsa.dev/provenance/v1" {
			continue
		}
		var problems []string
		if id := st.Predicate.RunDetails.Builder.ID; !strings.HasPrefix(id, forkRepositoryURL+"/") {
			problems = append(problems, fmt.Sprintf("the provenance's builder.id is %q, not the fork's (%s/...)", id, forkRepositoryURL))
		}
		source := false
		for _, d := range st.Predicate.BuildDefinition.ResolvedDependencies {
			source = source || (strings.Contains(d.URI, forkOrigin) && d.Digest["gitCommit"] == f.Revision)
		}
		if !source {
			problems = append(problems, fmt.Sprintf("the provenance records no source %s at the revision %s: %+v", forkRepositoryURL, f.Revision, st.Predicate.BuildDefinition.ResolvedDependencies))
		}
		if len(problems) == 0 {
			t.Logf("%s: provenance builder %s, source %s@%s", ref, st.Predicate.RunDetails.Builder.ID, forkOrigin, f.Revision)
		}
		return problems
	}
	return []string{"cosign verify-attestation found no SLSA provenance v1 statement"}
}

// cosignVerify runs the real cosign CLI: the signature and the SBOM attestation of ref under
// the test's public key (no transparency log: none is reachable, and a key signature needs none).
func (f *pushFixture) cosignVerify(t *testing.T, ref string, problems *[]string) {
	t.Helper()
	home := t.TempDir()
	cfg := f.Registry.DockerConfig(t)
	for _, c := range [][]string{{"verify"}, {"verify-attestation", "--type", "spdxjson"}} {
		args := append(append([]string{}, c...), "--key", filepath.Join(f.KeyDir, "cosign.pub"), "--insecure-ignore-tlog=true", "--allow-insecure-registry", ref)
		cmd := exec.Command("cosign", args...)
		cmd.Dir = home
		// Anything cosign would fetch from the internet (a TUF root, Rekor) goes to a closed
		// port: only the registry on 127.0.0.1 is reached.
		cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+cfg, "TUF_ROOT="+filepath.Join(home, "tuf"),
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
		if out, err := cmd.CombinedOutput(); err != nil {
			*problems = append(*problems, fmt.Sprintf("cosign %s --key cosign.pub %s: %v\n%s", strings.Join(c, " "), ref, err, out))
		} else {
			t.Logf("cosign %s --key cosign.pub %s: accepted", strings.Join(c, " "), ref)
		}
	}
}

// onlyRun checks that the registry holds one repository, the image's, and no tag but the
// published variants' (ci tags) and the per-image ones of the legs that pushed
// (sha256-<hex> for the SBOM referrers, .sig and .att for signatures and attestations).
func (s registryState) onlyRun(variantTags []string) []string {
	var problems []string
	if len(s.Repos) != 1 || s.Repos[0] != s.imageRepo {
		problems = append(problems, fmt.Sprintf("the registry holds the repositories %v, want only %s", s.Repos, s.imageRepo))
	}
	perImage := regexp.MustCompile(`^sha256-[0-9a-f]{64}(\.sig|\.att)?$`)
	for tag := range s.Tags {
		if !slices.Contains(variantTags, tag) && !perImage.MatchString(tag) {
			problems = append(problems, fmt.Sprintf("the registry has the tag %s, which no published variant's ci tags names", tag))
		}
	}
	return problems
}

// pushFail reports a push scenario's problem with the end of the run's log.
func pushFail(t *testing.T, r actRun, problems []string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	fail(t, r, "%s", strings.Join(problems, "\n"))
}

// TestBuildPushToMain: build.yml on a push to main of a private fork (forkOrigin), every job
// after test, the four legs, set up as docs/github-setup.md says: the registry, its user and
// password from REGISTRY, REGISTRY_USERNAME and the secret REGISTRY_PASSWORD; no arm64
// runner (arm64 cross-compiled and smoke-tested under qemu, the run saying so); SIGNING_MODE
// key with the key in the secrets. Each leg pushed by digest, signed and attested with that
// key, its labels and provenance naming the fork and the revision, smoke-tested again under
// runc and through the vulnerability gate (a fixable High finding planted: listed, not
// blocking), then per variant the index (signed too) and exactly the tags ci tags says,
// every tag of a variant on that one index of the two pushed images; the attest job not
// run, the merge summary saying the key signed; every other step run. The run is green.
func TestBuildPushToMain(t *testing.T) {
	f := newPushFixture(t, pushOptions{Advisories: []advisory{libcHigh}, KeyMode: true})
	r := f.runPush(t)
	var problems, all []string
	if r.Err != nil {
		problems = append(problems, fmt.Sprintf("act: %v, want a green run", r.Err))
	}
	s := f.state(t)
	for _, variant := range []string{"default", "aws-lc"} {
		_, p := f.published(t, r, s, variant)
		problems = append(problems, p...)
		all = append(all, f.ciTags(t, variant)...)
	}
	problems = append(problems, s.onlyRun(all)...)
	// No secret reaches the log: the registry password, the key's password, any line of the key.
	for name, v := range f.secrets(t) {
		for _, line := range strings.Split(v, "\n") {
			if len(line) >= 16 && strings.Contains(r.Log, line) {
				problems = append(problems, fmt.Sprintf("the run's log holds (part of) the secret %s", name))
				break
			}
		}
	}
	pushFail(t, r, problems)
	if len(problems) == 0 {
		t.Logf("published: %d tags in %s", len(s.Tags), s.repo)
	}
}

// heldBack checks what a variant that failed a gate leaves: none of the tags ci tags says for
// it is in the registry (the other checks of the run say what was published instead), and
// its merge job names the gate that held it back for that architecture.
func (f *pushFixture) heldBack(t *testing.T, r actRun, s registryState, variant, arch, gate string) []string {
	t.Helper()
	var problems []string
	for _, tag := range f.ciTags(t, variant) {
		if d, ok := s.Tags[tag]; ok {
			problems = append(problems, fmt.Sprintf("%s: the tag %s moved (to %s), though its %s leg failed %s", variant, tag, d, arch, gate))
		}
	}
	// The whole log, where the merge step's summary is printed too: act's host mode can drop
	// the last output of a step that fails at once (act's host mode: report_test.go).
	if want := variant + " " + arch + ": the " + gate + " did not pass"; !strings.Contains(r.Log, want) {
		problems = append(problems, fmt.Sprintf("%s: neither the merge job's output nor its summary says %q", variant, want))
	}
	return problems
}

// smokeFailureProblems: the aws-lc amd64 leg's runc smoke test failed; the run is red, no
// aws-lc tag moved, and the default variant published as on a green run.
func (f *pushFixture) smokeFailureProblems(t *testing.T, r actRun) []string {
	t.Helper()
	var problems []string
	if r.Err == nil {
		problems = append(problems, "act: the run is green, want red (a leg's smoke test failed)")
	}
	smokeJob := "smoke-test the pushed digest under runc (aws-lc, amd64)"
	if !strings.Contains(strings.Join(jobLines(r.Log, smokeJob), "\n"), "Failure - Main Smoke-test the pushed digest under runc") {
		problems = append(problems, fmt.Sprintf("the job %q did not fail its smoke step", smokeJob))
	}
	s := f.state(t)
	problems = append(problems, f.heldBack(t, r, s, "aws-lc", "amd64", "runc smoke test")...)
	_, p := f.published(t, r, s, "default")
	problems = append(problems, p...)
	return append(problems, s.onlyRun(f.ciTags(t, "default"))...)
}

// smokeFailsForAWSLCAmd64 plants the failing leg: the aws-lc amd64 row of the smoke job
// compares the image with the default variant's lock, as a leg whose image is not what its
// lock says would be judged (the runc smoke test's lock check fails).
func smokeFailsForAWSLCAmd64(t *testing.T) func(string) string {
	row := "          - variant: aws-lc\n            arch: amd64\n            lock: pipeline/lock/aws-lc.lock.json\n"
	return func(s string) string {
		if strings.Count(s, row) != 1 {
			t.Fatalf("build.yml's smoke job has not the row %q once", row)
		}
		return strings.Replace(s, row, strings.Replace(row, "aws-lc.lock.json", "stack.lock.json", 1), 1)
	}
}

// TestBuildPushSmokeFailureHoldsItsVariant: on a push to main, the aws-lc amd64 leg's runc
// smoke test fails (planted: it is compared with the default lock). The run is red; no tag
// of aws-lc moves, its merge job naming the smoke test; the default variant publishes
// exactly what ci tags says, as on a green run.
func TestBuildPushSmokeFailureHoldsItsVariant(t *testing.T) {
	f := newPushFixture(t, pushOptions{Advisories: []advisory{libcHigh}, Edit: smokeFailsForAWSLCAmd64(t)})
	r := f.runPush(t)
	pushFail(t, r, f.smokeFailureProblems(t, r))
}

// TestBuildPushSmokeGateRemovedFails plants back the defect the scenario above exists for:
// merge no longer compares a leg's runc smoke record with its digest. The aws-lc tags then
// move to an image whose smoke test failed, and the scenario's checks must say so.
func TestBuildPushSmokeGateRemovedFails(t *testing.T) {
	check := "            if [[ \"$smoked\" != \"$digest\" ]]; then\n"
	f := newPushFixture(t, pushOptions{Advisories: []advisory{libcHigh}, Edit: func(s string) string {
		s = smokeFailsForAWSLCAmd64(t)(s)
		if strings.Count(s, check) != 1 {
			t.Fatalf("build.yml's merge job has not %q once", check)
		}
		return strings.Replace(s, check, "            if false; then\n", 1)
	}})
	r := f.runPush(t)
	problems := f.smokeFailureProblems(t, r)
	moved := false
	for _, p := range problems {
		moved = moved || (strings.HasPrefix(p, "aws-lc: the tag ") && strings.Contains(p, " moved "))
	}
	if !moved {
		fail(t, r, "with merge's smoke check planted away, the scenario finds no aws-lc tag moved (problems: %q)", problems)
		return
	}
	t.Logf("with merge's smoke check planted away, the scenario finds:\n%s", strings.Join(problems, "\n"))
}

// TestBuildPushCriticalCVEHoldsItsVariant: on a push to main, the stand-in database has a
// critical OpenSSL vulnerability with a fix, which only the default variant carries
// (OpenSSL 3.5.7; the AWS-LC variant has none). Both default scan legs fail the gate naming
// it; the run is red; no default tag moves, its merge job naming the gate; the aws-lc
// variant publishes exactly what ci tags says.
func TestBuildPushCriticalCVEHoldsItsVariant(t *testing.T) {
	f := newPushFixture(t, pushOptions{Advisories: []advisory{libcHigh, opensslCritical}})
	r := f.runPush(t)
	pushFail(t, r, f.criticalCVEProblems(t, r))
}

// criticalCVEProblems: the default variant's scan legs failed the gate on opensslCritical;
// the run is red, no default tag moved, and aws-lc published as on a green run.
func (f *pushFixture) criticalCVEProblems(t *testing.T, r actRun) []string {
	t.Helper()
	var problems []string
	if r.Err == nil {
		problems = append(problems, "act: the run is green, want red (a fixable critical vulnerability)")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		job := "vulnerability gate (default, " + arch + ")"
		want := "default " + arch + ": fixable critical vulnerability " + opensslCritical.ID + " in openssl 3.5.7 (fixed in 3.5.8)"
		// The whole log, where the gate's summary is printed too (act's host mode: report_test.go).
		if !strings.Contains(r.Log, want) {
			problems = append(problems, fmt.Sprintf("neither the output of the job %q nor its summary says %q", job, want))
		}
	}
	s := f.state(t)
	problems = append(problems, f.heldBack(t, r, s, "default", "amd64", "vulnerability gate")...)
	_, p := f.published(t, r, s, "aws-lc")
	problems = append(problems, p...)
	return append(problems, s.onlyRun(f.ciTags(t, "aws-lc"))...)
}

// TestBuildPushScanGateRemovedFails plants back, in one run (each push run costs minutes),
// two defects of the scan job that the scenarios above exist for, and shows each is found:
//   - merge no longer compares a leg's scan record with its digest: the default tags then
//     move to images with a fixable critical vulnerability, and the critical-CVE scenario's
//     checks must say so;
//   - the scan step without its output-file: anchore/scan-action writes its report under
//     the runner's TMPDIR (grype-XXXXXX/output), which a self-hosted runner keeps, and the
//     run's TMPDIR check must find it.
func TestBuildPushScanGateRemovedFails(t *testing.T) {
	check := "            if [[ \"$scanned\" != \"$digest\" ]]; then\n"
	// The scan job's (the pull request's check job has the same line without this comment).
	output := "          # keeps after the job (found by the workflow tier, README: Tests).\n          output-file: ${{ runner.temp }}/grype-${{ matrix.variant }}-${{ matrix.arch }}.json\n"
	f := newPushFixture(t, pushOptions{Advisories: []advisory{libcHigh, opensslCritical}, LeavesTmp: true, Edit: func(s string) string {
		for _, old := range []string{check, output} {
			if strings.Count(s, old) != 1 {
				t.Fatalf("build.yml has not %q once", old)
			}
		}
		s = strings.Replace(s, check, "            if false; then\n", 1)
		return strings.Replace(s, output, "", 1)
	}})
	r := f.runPush(t)
	problems := f.criticalCVEProblems(t, r)
	moved := false
	for _, p := range problems {
		moved = moved || (strings.HasPrefix(p, "default: the tag ") && strings.Contains(p, " moved "))
	}
	if !moved {
		fail(t, r, "with merge's scan check planted away, the scenario finds no default tag moved (problems: %q)", problems)
	} else {
		t.Logf("with merge's scan check planted away, the scenario finds:\n%s", strings.Join(problems, "\n"))
	}
	// One report per scan leg, each in a grype-XXXXXX directory of its own.
	reports := 0
	for _, l := range r.LeftInTmp {
		if strings.HasPrefix(l, "grype-") && strings.Contains(l, "/output") {
			reports++
		}
	}
	if reports != 4 {
		fail(t, r, "without output-file, the run's TMPDIR check finds %d scan reports, want 4 (one per scan leg): %q", reports, r.LeftInTmp)
	} else {
		t.Logf("without output-file, the run's TMPDIR check finds:\n%s", strings.Join(r.LeftInTmp, "\n"))
	}
}
