//go:build workflows

package workflowtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// update.yml's PGO leg on an update day (issue 36: "a PGO profile recorded, the profile file
// in the same commit"). What the other update scenarios stand in for, and besides:
//   - the default lock is one that compiles here: the test lock's required components (the
//     tarballs Debian carries, on the loopback mirror .ci/fetch-sources fills), PCRE2 one
//     release behind; the scenario's mirror serves the real PCRE2 release as the new one;
//   - the record-profiles job trains the default lock's linux/amd64 leg for real: `ci
//     pgo-profile --in-repo` on the Dagger lab's engine (the workflow's default engine; the
//     lab's CLI stands in for the one dagger/dagger-for-github downloads), from the loopback
//     mirror through the repository variable UPDATE_PGO_FLAGS (--mirror; empty on GitHub);
//   - the legs that cannot train here (the AWS-LC variant's lock, arm64) are skipped with
//     their reasons through the repository variable UPDATE_PGO_SKIP_LEGS (empty on GitHub).

// profileRunTimeout bounds the act run that trains: the stack's instrumented OpenSSL and
// nginx compiled in the engine and the training workload, from a cold engine cache.
const profileRunTimeout = 60 * time.Minute

// profileSkips are the legs this machine does not train, by lock or platform, with the
// reason the run gives (UPDATE_PGO_SKIP_LEGS).
var profileSkips = map[string]string{
	"aws-lc": "the workflow tier trains the default lock only: the AWS-LC variant's lock here pins a stand-in PCRE2, which does not compile (ci: TestDaggerAWSLCVariantPGO trains that variant on the engine)",
	"arm64":  "the workflow tier has no arm runner",
}

// staleTrainablePCRE2 is the release the fixture's default lock pins before the update: a
// stand-in whose checksum only is in the lock (an unsigned component's locked release is not
// fetched again by check-updates).
const staleTrainablePCRE2 = "10.45"

// profileFixture is an update fixture whose default lock trains (see newProfileFixture).
type profileFixture struct {
	*updateFixture
	Lab    *daggerLab
	Mirror string // the loopback mirror of the real tarballs, for ci pgo-profile
	// PCRE2 is the real tarball of the new PCRE2 release, as the scenario serves it.
	PCRE2 []byte
	// NewPCRE2 is trixie.lock.json's PCRE2 (10.46): the entry the update must write.
	NewPCRE2 lock.Component
}

// newProfileFixture: the update fixture (both locks current against the recorded upstream)
// whose default lock is then replaced by one that compiles here: the test twin's nginx
// 1.30.4 (its git tree), OpenSSL 3.5.7 and zlib 1.3.1, and PCRE2 at staleTrainablePCRE2 (the
// shipped lock's component set: no optional components). Against the recorded upstream only
// PCRE2 is new (nothing there is newer than nginx 1.30.4 or OpenSSL 3.5.7, and zlib's latest
// is 1.3.1); the scenario's mirror serves the real PCRE2 10.46 tarball (Debian trixie's, as
// trixie.lock.json pins it: the recorded upstream's newest PCRE2) and no
// signature of it, so it stays unsigned with the test lock's reason (which names no version,
// as check-updates requires). The lock names its base images by tag, as the shipped one does,
// and check-updates does not look them up here (--skip-images): the lab's engine resolves
// the builder's tag to its stand-in, and the scenario registry's digests name images no engine
// here has. edit, when set, rewrites update.yml in the copy.
func newProfileFixture(t *testing.T, edit func(string) string) *profileFixture {
	t.Helper()
	lab := needDaggerLab(t, "update.yml's record-profiles job trains on a Dagger engine")
	p := newTrainableUpdateFixture(t, edit)
	p.Lab = lab
	return p
}

// newTrainableUpdateFixture is newProfileFixture without the engine.
func newTrainableUpdateFixture(t *testing.T, edit func(string) string) *profileFixture {
	t.Helper()
	mirrorDir := testenv.MirrorDir(t)
	test, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	trixie, err := lock.Load(testenv.TrixieLockPath())
	if err != nil {
		t.Fatal(err)
	}
	p := &profileFixture{Mirror: testenv.Mirror(t), NewPCRE2: trixie.MustComponent(lock.PCRE2)}
	p.PCRE2, err = os.ReadFile(filepath.Join(mirrorDir, p.NewPCRE2.FileName()))
	if err != nil {
		t.Fatalf("the mirror lacks trixie.lock.json's PCRE2 (.ci/fetch-sources gets it): %v", err)
	}
	if sum := upstreamtest.SHA256(p.PCRE2); sum != p.NewPCRE2.SHA256 || p.NewPCRE2.Signature != nil || p.NewPCRE2.Version != "10.46" {
		t.Fatalf("trixie.lock.json's PCRE2 is %s (sha256 %s, signed %v), the mirror's %s: the scenario wants the unsigned 10.46 the mirror has",
			p.NewPCRE2.Version, p.NewPCRE2.SHA256, p.NewPCRE2.Signature != nil, sum)
	}
	p.updateFixture = newUpdateFixtureWith(t, updateFixtureOptions{Edit: edit, Prepare: func(f *updateFixture) {
		l := &lock.Lock{Schema: test.Schema, SourceDateEpoch: test.SourceDateEpoch, Images: test.Images}
		for _, name := range []string{lock.Zlib, lock.PCRE2, lock.OpenSSL, lock.Nginx} {
			l.SetComponent(test.MustComponent(name))
		}
		old := p.NewPCRE2
		old.Version = staleTrainablePCRE2
		old.URL = strings.ReplaceAll(old.URL, p.NewPCRE2.Version, staleTrainablePCRE2)
		standIn := upstreamtest.Tarball(t, "pcre2-"+staleTrainablePCRE2, map[string]string{"README": "pcre2 " + staleTrainablePCRE2 + " (a test stand-in)\n"})
		old.SHA256 = upstreamtest.SHA256(standIn)
		l.SetComponent(old)
		if err := l.Write(filepath.Join(f.Repo, "pipeline", "lock", "stack.lock.json")); err != nil {
			t.Fatal(err)
		}
		u := f.Scenario.Upstream
		u.SetFile(old.FileName(), standIn)
		u.SetFile(p.NewPCRE2.FileName(), p.PCRE2)
		u.RemoveFile(p.NewPCRE2.FileName() + ".sig")
		f.Flags += " --skip-images"
	}})
	return p
}

// skipLegs is UPDATE_PGO_SKIP_LEGS.
func skipLegs(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(profileSkips)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (p *profileFixture) run(t *testing.T) actRun {
	t.Helper()
	env := append([]string{"GIT_SSL_CAINFO=" + p.Remote.CAFile, "NODE_EXTRA_CA_CERTS=" + p.Remote.CAFile}, p.Lab.Env...)
	r := runActWith(t, actOptions{Fixture: p.Repo, Workflow: "update.yml", Event: "schedule", Env: env, Timeout: profileRunTimeout,
		Vars: map[string]string{"CHECK_UPDATES_UPSTREAM_FLAGS": p.Flags, "UPDATE_PGO_SKIP_LEGS": skipLegs(t),
			"UPDATE_PGO_FLAGS": "--mirror " + p.Mirror}})
	if m := recordStepRE.FindStringSubmatch(r.Log); m != nil {
		t.Logf("the record step (ci pgo-profile on the engine) took %s", m[1])
	}
	return r
}

// recordStepRE finds how long act says the record step took.
var recordStepRE = regexp.MustCompile(`Success - Main Record the profile \[([^\]]+)\]`)

// skipNoticeRE is the notice the record-profiles job gives for a leg it does not train.
var skipNoticeRE = regexp.MustCompile(`PGO profile of ([a-z-]+)\.lock\.json for linux/([a-z0-9]+) not recorded: ([^\r\n]*)`)

// profileURLRE is the url ci pgo-profile --in-repo gives a profile kept beside its lock.
var profileURLRE = regexp.MustCompile(`^profiles/nginx-forge-pgo-amd64-([0-9a-f]{12})\.tar\.gz$`)

// gitBlob is a file of a revision in the git directory dir, as bytes (stdout only).
func gitBlob(t *testing.T, dir, rev, file string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "blob", rev+":"+file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file blob %s:%s: %w (%s)", rev, file, err, strings.TrimSpace(stderr.String()))
	}
	return b, nil
}

// tarHas reports whether the gzipped tarball b holds an entry named name.
func tarHas(b []byte, name string) (bool, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return false, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if strings.TrimPrefix(h.Name, "./") == name {
			return true, nil
		}
	}
}

// profileProblems checks what the update day with a training must leave: a green run; the
// branch one commit on main, that commit changing exactly the default lock and the profile
// tarball it names; the lock with PCRE2 at the real new release, nothing else moved, and one
// profile, for linux/amd64, kept in the repository (url profiles/nginx-forge-pgo-amd64-<the
// training key's first 12 hex>.tar.gz) whose SHA-256 is the committed tarball's, a training's
// output (pgo/compiler inside); the pull request asked for with the profile in its body; and
// exactly the legs that cannot train here skipped, each with its reason.
func profileProblems(t *testing.T, p *profileFixture, r actRun) []string {
	t.Helper()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if r.Err != nil {
		add("act: %v, want a green run", r.Err)
	}
	skipped := map[string]string{}
	for _, m := range skipNoticeRE.FindAllStringSubmatch(r.Log, -1) {
		skipped[m[1]+"/"+m[2]] = strings.TrimSpace(m[3])
	}
	want := map[string]string{"aws-lc/amd64": profileSkips["aws-lc"], "aws-lc/arm64": profileSkips["aws-lc"], "stack/arm64": profileSkips["arm64"]}
	if len(skipped) != len(want) {
		add("the legs skipped are %v, want exactly %v", skipped, want)
	} else {
		for leg, why := range want {
			if skipped[leg] != why {
				add("the leg %s is skipped with %q, want %q", leg, skipped[leg], why)
			}
		}
	}
	if b := p.Remote.Branches(t); !slices.Contains(b, updateBranch) {
		add("the remote has the branches %v, no %s", b, updateBranch)
		return problems
	}
	bare := p.Remote.Bare
	if n := strings.TrimSpace(git(t, bare, "rev-list", "--count", "main.."+updateBranch)); n != "1" {
		add("%s is %s commits ahead of main, want 1", updateBranch, n)
	}
	before, err := lock.Parse([]byte(git(t, bare, "show", "main:pipeline/lock/stack.lock.json")))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := gitBlob(t, bare, updateBranch, "pipeline/lock/stack.lock.json")
	if err != nil {
		add("%v", err)
		return problems
	}
	after, err := lock.Parse(lb)
	if err != nil {
		add("the branch's stack.lock.json: %v", err)
		return problems
	}
	for _, name := range []string{lock.Nginx, lock.OpenSSL, lock.PCRE2, lock.Zlib} {
		b, a := before.MustComponent(name), after.MustComponent(name)
		switch {
		case name == lock.PCRE2 && (a.Version != p.NewPCRE2.Version || a.SHA256 != upstreamtest.SHA256(p.PCRE2) || a.Unsigned != p.NewPCRE2.Unsigned):
			add("pcre2 on the branch is %s (sha256 %s, unsigned %q), want %s with the real tarball's SHA-256 %s and its unsigned reason kept",
				a.Version, a.SHA256, a.Unsigned, p.NewPCRE2.Version, upstreamtest.SHA256(p.PCRE2))
		case name != lock.PCRE2 && (a.Version != b.Version || a.SHA256 != b.SHA256):
			add("%s moved from %s to %s", name, b.Version, a.Version)
		}
	}
	if len(after.Profiles) != 1 {
		add("the branch's lock records the profiles %+v, want one (linux/amd64)", after.Profiles)
		return problems
	}
	prof := after.Profiles[0]
	m := profileURLRE.FindStringSubmatch(prof.URL)
	switch {
	case prof.Platform != "linux/amd64":
		add("the recorded profile is for %s, want linux/amd64", prof.Platform)
	case m == nil:
		add("the recorded profile's url is %q, want profiles/nginx-forge-pgo-amd64-<12 hex>.tar.gz (in the repository, beside the lock)", prof.URL)
	case !strings.HasPrefix(prof.Training, m[1]):
		add("the recorded profile's url %s does not name its training key %s", prof.URL, prof.Training)
	}
	tarball := "pipeline/lock/" + prof.URL
	commit := strings.Fields(git(t, bare, "show", "--name-only", "--format=", updateBranch))
	slices.Sort(commit)
	if wantFiles := []string{tarball, "pipeline/lock/stack.lock.json"}; !slices.Equal(commit, wantFiles) {
		add("the branch's commit changes %q, want exactly %q (the lock and the profile it names, together)", commit, wantFiles)
	}
	tb, err := gitBlob(t, bare, updateBranch, tarball)
	if err != nil {
		add("the lock names the profile %s, which the branch does not hold: %v", tarball, err)
	} else {
		if sum := upstreamtest.SHA256(tb); sum != prof.SHA256 {
			add("the committed %s has sha256 %s, the lock pins %s", tarball, sum, prof.SHA256)
		}
		if ok, err := tarHas(tb, "pgo/compiler"); !ok {
			add("the committed %s is not a training's output (no pgo/compiler: %v)", tarball, err)
		}
	}
	created := false
	for _, c := range p.Remote.API.Calls() {
		if c.Method == "POST" && c.Path == "/repos/nginx-forge/nginx-forge/pulls" {
			body, _ := c.Body["body"].(string)
			created = true
			row := fmt.Sprintf("| stack.lock.json | linux/amd64 | `%s` | `%s` |", tarball, prof.SHA256)
			if !strings.Contains(body, "## PGO profiles, recorded on native runners") || !strings.Contains(body, row) {
				add("the pull request's body does not list the profile (%q):\n%s", row, body)
			}
		}
	}
	if !created {
		add("no pull request was asked for; API calls: %+v", p.Remote.API.Calls())
	}
	return problems
}

// TestUpdateRecordsProfile: the default lock has PCRE2 one release behind on the day the
// schedule runs: the run is green; record-profiles trains the default lock's linux/amd64 leg
// on the Dagger engine (ci pgo-profile --in-repo) and skips the other three legs, each saying
// why; the branch's one commit holds the updated lock naming the profile and the profile
// tarball itself, whose SHA-256 is the lock's (profileProblems).
func TestUpdateRecordsProfile(t *testing.T) {
	p := newProfileFixture(t, nil)
	r := p.run(t)
	if problems := profileProblems(t, p, r); len(problems) > 0 {
		fail(t, r, "%s", strings.Join(problems, "\n"))
	}
}

// TestUpdateProfileLeftOutFails plants back the defect the scenario is about: the
// pull-request job's paths without pipeline/lock/profiles/*.tar.gz, so that the lock naming
// the profile is committed without the profile. The run stays green; the scenario must find
// the tarball missing from the branch.
func TestUpdateProfileLeftOutFails(t *testing.T) {
	old := ` 'pipeline/lock/keys/*.asc' 'pipeline/lock/profiles/*.tar.gz' pipeline/advisory/advisories.json; do`
	p := newProfileFixture(t, func(s string) string {
		if strings.Count(s, old) != 1 {
			t.Fatalf("update.yml does not have %q once", old)
		}
		return strings.Replace(s, old, ` 'pipeline/lock/keys/*.asc' pipeline/advisory/advisories.json; do`, 1)
	})
	r := p.run(t)
	problems := profileProblems(t, p, r)
	found := false
	for _, pr := range problems {
		found = found || strings.Contains(pr, "which the branch does not hold")
	}
	if !found {
		fail(t, r, "with the profiles left out of the pull request's paths, the scenario does not find the profile missing (problems: %q)", problems)
	}
}
