//go:build workflows

package workflowtest

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	advisorydata "github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// update.yml on its schedule, under act, against loopback stand-ins:
//   - GitHub's release and git database API, nginx.org and the download mirror: the
//     recorded GitHub responses of pipeline/upstream/testdata with stand-in tarballs signed
//     by test keys (upstreamtest.DefaultLockScenario), handed to check-updates through the
//     repository variable CHECK_UPDATES_UPSTREAM_FLAGS;
//   - nginx's and OpenSSL's advisory feeds, in the scenarios that read them
//     (updateFixtureOptions.Feeds): upstreamtest.AdvisoryFeeds, upstream's recorded answers,
//     handed to check-updates through the same variable (the others skip the feeds);
//   - the base images' registry: a loopback registry with the scenario's indexes;
//   - github.com: a TLS server on loopback holding the repository (git http-backend) and the
//     pulls API create-pull-request calls;
//   - the PGO profiles: not recorded (no Dagger engine or arm runner here), said through the
//     repository variable UPDATE_PGO_SKIP_REASON; update_profile_test.go records one on the
//     Dagger lab's engine.

// pgoSkipReason is what the run says about the profiles it does not record.
const pgoSkipReason = "the workflow tier has no Dagger engine and no arm runner"

// updateFixture is a copy of this checkout whose two locks are current against the
// scenario (check-updates --write ran on them), committed on main, with origin the
// loopback remote.
type updateFixture struct {
	Repo     string
	Remote   *remote
	Scenario *upstreamtest.DefaultLockScenario
	Flags    string
	CI       string
	// Feeds are the stand-in advisory feeds (updateFixtureOptions.Feeds), else nil.
	Feeds *upstreamtest.AdvisoryFeeds
}

// newUpdateFixture builds it; stale names the stack lock's components set back to the
// scenario's locked releases (one release behind upstream), whose signer keys are then not
// vendored. edit, when set, rewrites update.yml in the copy.
func newUpdateFixture(t *testing.T, stale []string, edit func(string) string) *updateFixture {
	t.Helper()
	return newUpdateFixtureKeys(t, stale, stale, edit)
}

// newUpdateFixtureKeys is newUpdateFixture with the stale components whose keys leave
// keys/ named apart (unvendor, a subset of stale).
func newUpdateFixtureKeys(t *testing.T, stale, unvendor []string, edit func(string) string) *updateFixture {
	t.Helper()
	return newUpdateFixtureWith(t, updateFixtureOptions{Stale: stale, Unvendor: unvendor, Edit: edit})
}

// updateFixtureOptions: what a scenario changes in the fixture (see newUpdateFixture).
type updateFixtureOptions struct {
	Stale, Unvendor []string
	Edit            func(string) string
	// Prepare changes the fixture's files (f.Repo, both locks current against the
	// scenario, the stale components set back) before they are committed.
	Prepare func(f *updateFixture)
	// Upstream changes the stand-in upstream before the locks are brought up to date
	// against it (what it offers then is what they are current with).
	Upstream func(s *upstreamtest.DefaultLockScenario)
	// Feeds: the run reads stand-in advisory feeds (f.Feeds, upstream's recorded answers)
	// instead of skipping them, and the fixture's snapshot is the reviewed one as those
	// feeds state it less the nginx advisories in DropAdvisories (which the run's refresh
	// then adds).
	Feeds          bool
	DropAdvisories []string
}

func newUpdateFixtureWith(t *testing.T, o updateFixtureOptions) *updateFixture {
	t.Helper()
	stale, unvendor, edit := o.Stale, o.Unvendor, o.Edit
	root := testenv.RepoRoot()
	dir := t.TempDir()
	f := &updateFixture{Repo: filepath.Join(dir, "repo"), Scenario: upstreamtest.NewDefaultLockScenario(t)}
	s := f.Scenario
	if o.Upstream != nil {
		o.Upstream(s)
	}
	f.CI = filepath.Join(dir, "ci-bin")
	run(t, root, nil, "go", "build", "-o", f.CI, "./ci")
	copyTracked(t, root, f.Repo)
	if edit != nil {
		p := filepath.Join(f.Repo, ".github", "workflows", "update.yml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// --skip-advisory-feeds, unless the scenario stands the feeds in (o.Feeds): the others
	// check the update's flow against the recorded releases; the advisory feeds' refresh,
	// and a failing feed's exit 3, are ci's tests (check_updates_feeds_test.go). The
	// fixture's own check-updates runs below always skip them: the snapshot is set after.
	f.Flags = strings.Join([]string{"--github-api", s.Upstream.GitHubAPI(), "--nginx-org", s.Upstream.NginxOrg(),
		"--mirror", s.Upstream.Mirror(), "--registry", s.Registry, "--cache", filepath.Join(dir, "sources")}, " ")
	prepFlags := f.Flags + " --skip-advisory-feeds"
	if o.Feeds {
		f.Feeds = upstreamtest.NewAdvisoryFeeds(t)
		f.Flags += " " + strings.Join(f.Feeds.Flags(), " ")
	} else {
		f.Flags = prepFlags
	}

	// The locks: the scenario's (stand-in checksums, test signers), the AWS-LC variant's
	// PCRE2 the same as the default lock's; then brought up to date by check-updates itself,
	// which also vendors the test signers' keys from the mirror.
	stackFile := filepath.Join(f.Repo, "pipeline", "lock", "stack.lock.json")
	awsFile := filepath.Join(f.Repo, "pipeline", "lock", "aws-lc.lock.json")
	orig, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := orig.Write(stackFile); err != nil {
		t.Fatal(err)
	}
	aws, err := lock.Load(awsFile)
	if err != nil {
		t.Fatal(err)
	}
	aws.SetComponent(orig.MustComponent(lock.PCRE2))
	if err := aws.Write(awsFile); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{stackFile, awsFile} {
		run(t, f.Repo, []string{"GITHUB_ACTIONS=", "GITHUB_OUTPUT=", "GITHUB_STEP_SUMMARY=", "GITHUB_TOKEN="}, f.CI,
			append([]string{"check-updates", "--write", "--lock", l}, strings.Fields(prepFlags)...)...)
	}
	if o.Feeds {
		// A feed stood in here holds the OpenSSL records of three advisories only: the
		// snapshot as it states them, or the run would propose dropping the others.
		if err := os.WriteFile(filepath.Join(f.Repo, filepath.FromSlash(advisorydata.DefaultPath)), upstreamtest.FeedSnapshot(t, o.DropAdvisories...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The stale components go back to their locked releases, their keys out of keys/.
	cur, err := lock.Load(stackFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		cur.SetComponent(orig.MustComponent(name))
	}
	for _, name := range unvendor {
		if err := os.Remove(filepath.Join(f.Repo, "pipeline", "lock", "keys", s.Keys[name].Fingerprint+".asc")); err != nil {
			t.Fatal(err)
		}
	}
	if err := cur.Write(stackFile); err != nil {
		t.Fatal(err)
	}
	if o.Prepare != nil {
		o.Prepare(f)
	}

	f.Remote = newRemote(t, dir)
	git(t, f.Repo, "init", "-q", "-b", "main")
	git(t, f.Repo, "add", "-A")
	git(t, f.Repo, "commit", "-q", "-m", "fixture")
	git(t, f.Repo, "remote", "add", "origin", f.Remote.URL)
	if err := os.MkdirAll(filepath.Dir(f.Remote.Bare), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "clone", "-q", "--bare", f.Repo, f.Remote.Bare)
	git(t, f.Remote.Bare, "config", "http.receivepack", "true")
	// As actions/checkout leaves it: origin/main known.
	git(t, f.Repo, "update-ref", "refs/remotes/origin/main", "HEAD")
	return f
}

func (f *updateFixture) run(t *testing.T) actRun {
	t.Helper()
	return runAct(t, f.Repo, "update.yml", "schedule",
		map[string]string{"CHECK_UPDATES_UPSTREAM_FLAGS": f.Flags, "UPDATE_PGO_SKIP_REASON": pgoSkipReason},
		[]string{"GIT_SSL_CAINFO=" + f.Remote.CAFile, "NODE_EXTRA_CA_CERTS=" + f.Remote.CAFile})
}

const updateBranch = "automation/upstream-updates"

// TestUpdateNothingNew: both locks current, the default one at nginx 1.30.6 (issue 46's
// acceptance: a lock already at the release that fixes CVE-2026-42945 proposes nothing),
// with the stand-in advisory feeds read and stating what the snapshot holds: the run is
// green, no branch is pushed, no pull request is asked for, the locks are as they were.
func TestUpdateNothingNew(t *testing.T) {
	f := newUpdateFixtureWith(t, updateFixtureOptions{Feeds: true,
		Upstream: func(s *upstreamtest.DefaultLockScenario) { s.OfferNginx1306(t) }})
	if v := mustLoad(t, filepath.Join(f.Repo, "pipeline", "lock", "stack.lock.json")).MustComponent(lock.Nginx).Version; v != "1.30.6" {
		t.Fatalf("the fixture's default lock pins nginx %s, want 1.30.6", v)
	}
	r := f.run(t)
	if r.Err != nil {
		fail(t, r, "act: %v, want a green run", r.Err)
	}
	if b := f.Remote.Branches(t); !slices.Equal(b, []string{"main"}) {
		fail(t, r, "the remote has the branches %v, want only main", b)
	}
	if c := f.Remote.API.Calls(); len(c) != 0 {
		fail(t, r, "the pulls API was called: %+v", c)
	}
	// Both locks were checked, by the built binary, and found current; each check read
	// both feeds.
	for _, l := range []string{"stack", "aws-lc"} {
		if !strings.Contains(r.Log, "Upstream updates (pipeline/lock/"+l+".lock.json)") {
			fail(t, r, "the log does not show check-updates' table for %s.lock.json", l)
		}
	}
	reqs := f.Feeds.Requests()
	if n, m := count(reqs, "/nginx.xml"), count(reqs, "/secjson"); n != 2 || m != 2 {
		fail(t, r, "the feeds were read %d (nginx) and %d (OpenSSL) times, want twice each (once per lock): %v", n, m, reqs)
	}
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

func mustLoad(t *testing.T, file string) *lock.Lock {
	t.Helper()
	l, err := lock.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestUpdateSecurityRelease: issue 46's replay of the scheduled update. The default lock
// pins nginx 1.26.2 (the seed lock's, inside CVE-2026-42945's affected range) and PCRE2 one
// release behind (its signer's key not vendored yet); the stand-in upstream offers nginx
// 1.30.6 and the stand-in feeds list CVE-2026-60005, which the snapshot lacks. The run is
// green; the branch on the remote is main plus one commit with exactly the default lock
// (nginx 1.30.6 and PCRE2 10.46, the served tarballs' checksums, nothing else moved), the
// newly vendored key and the refreshed snapshot; the pull request is asked for as a security
// update naming CVE-2026-42945 (title, body) with the dependencies and security labels.
func TestUpdateSecurityRelease(t *testing.T) {
	f := newUpdateFixtureWith(t, updateFixtureOptions{Stale: []string{lock.PCRE2, lock.Nginx}, Unvendor: []string{lock.PCRE2},
		Feeds: true, DropAdvisories: []string{"CVE-2026-60005"},
		Upstream: func(s *upstreamtest.DefaultLockScenario) { s.OfferNginx1306(t) }})
	r := f.run(t)
	if r.Err != nil {
		fail(t, r, "act: %v, want a green run", r.Err)
	}
	if b := f.Remote.Branches(t); !slices.Contains(b, updateBranch) {
		fail(t, r, "the remote has the branches %v, no %s", b, updateBranch)
		return
	}
	if n := strings.TrimSpace(git(t, f.Remote.Bare, "rev-list", "--count", "main.."+updateBranch)); n != "1" {
		t.Errorf("%s is %s commits ahead of main, want 1", updateBranch, n)
	}
	key := "pipeline/lock/keys/" + f.Scenario.Keys[lock.PCRE2].Fingerprint + ".asc"
	changed := strings.Fields(git(t, f.Remote.Bare, "diff", "--name-only", "main", updateBranch))
	slices.Sort(changed)
	if want := []string{"pipeline/advisory/advisories.json", key, "pipeline/lock/stack.lock.json"}; !slices.Equal(changed, want) {
		t.Errorf("the branch changes %q, want exactly %q", changed, want)
	}
	before, err := lock.Parse([]byte(git(t, f.Remote.Bare, "show", "main:pipeline/lock/stack.lock.json")))
	if err != nil {
		t.Fatal(err)
	}
	after, err := lock.Parse([]byte(git(t, f.Remote.Bare, "show", updateBranch+":pipeline/lock/stack.lock.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v := before.MustComponent(lock.Nginx).Version; v != "1.26.2" {
		t.Errorf("main's default lock pins nginx %s, want 1.26.2", v)
	}
	want := map[string]string{lock.PCRE2: "10.46", lock.Nginx: "1.30.6"}
	for _, name := range []string{lock.Nginx, lock.OpenSSL, lock.PCRE2, lock.Zlib} {
		b, a := before.MustComponent(name), after.MustComponent(name)
		switch v, moved := want[name]; {
		case moved && (a.Version != v || a.SHA256 != upstreamtest.SHA256(f.Scenario.Tarballs[a.FileName()])):
			t.Errorf("%s on the branch is %s (%s), want %s with the served tarball's SHA-256", name, a.Version, a.SHA256, v)
		case !moved && (a.Version != b.Version || a.SHA256 != b.SHA256):
			t.Errorf("%s moved from %s to %s", name, b.Version, a.Version)
		}
	}
	// The key file holds exactly one public key, the PCRE2 signer's (check-updates writes it
	// in its own armor).
	ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(git(t, f.Remote.Bare, "show", updateBranch+":"+key)))
	if err != nil || len(ring) != 1 || ring[0].PrivateKey != nil ||
		strings.ToUpper(hex.EncodeToString(ring[0].PrimaryKey.Fingerprint)) != f.Scenario.Keys[lock.PCRE2].Fingerprint {
		t.Errorf("%s on the branch is not the PCRE2 signer's public key alone (%d keys, %v)", key, len(ring), err)
	}
	if snap := git(t, f.Remote.Bare, "show", updateBranch+":pipeline/advisory/advisories.json"); !strings.Contains(snap, `"CVE-2026-60005"`) {
		t.Error("the snapshot on the branch lacks CVE-2026-60005, which the feed added")
	}
	var created, labelled bool
	for _, c := range f.Remote.API.Calls() {
		switch {
		case c.Method == "POST" && c.Path == "/repos/nginx-forge/nginx-forge/pulls":
			title, _ := c.Body["title"].(string)
			body, _ := c.Body["body"].(string)
			t.Logf("the pull request's title: %s", title)
			_, sec, _ := strings.Cut(title, "(security: ")
			created = c.Body["head"] == "nginx-forge:"+updateBranch && c.Body["base"] == "main" &&
				strings.Contains(title, "10.46") && strings.Contains(title, "nginx 1.30.6") && strings.Contains(sec, "CVE-2026-42945")
			if !created {
				t.Errorf("the pull request asked for is %+v, want its title to name pcre2 10.46, nginx 1.30.6 and CVE-2026-42945 as a security fix", c.Body)
			}
			for _, w := range []string{"Default build (OpenSSL + zlib)", "## Security update", "[CVE-2026-42945](", "1.26.2 -> 1.30.6", "## Advisories snapshot refreshed", "[CVE-2026-60005]("} {
				if !strings.Contains(body, w) {
					t.Errorf("the pull request body lacks %q:\n%s", w, body)
				}
			}
		case c.Method == "POST" && strings.HasSuffix(c.Path, "/issues/1/labels"):
			labels, _ := c.Body["labels"].([]any)
			labelled = slices.Contains(labels, any("dependencies")) && slices.Contains(labels, any("security"))
			if !labelled {
				t.Errorf("the pull request is labelled %v, want dependencies and security", c.Body["labels"])
			}
		}
	}
	if !created || !labelled {
		fail(t, r, "pull request created %v, labelled %v; API calls: %+v", created, labelled, f.Remote.API.Calls())
	}
	if !strings.Contains(r.Log, pgoSkipReason) {
		t.Errorf("the run does not say why no PGO profile was recorded (%q)", pgoSkipReason)
	}
}

// TestUpdateFixedAddPathsFails plants issue 36's defect back (add-paths listing
// pipeline/lock/profiles/*.tar.gz, which matches nothing in a run that records no profile):
// the same update now fails at create-pull-request and pushes no branch.
func TestUpdateFixedAddPathsFails(t *testing.T) {
	old := "          add-paths: ${{ steps.paths.outputs.paths }}\n"
	planted := "          add-paths: |\n            pipeline/lock/stack.lock.json\n            pipeline/lock/aws-lc.lock.json\n            pipeline/lock/keys/*.asc\n            pipeline/lock/profiles/*.tar.gz\n"
	f := newUpdateFixture(t, []string{lock.PCRE2}, func(s string) string {
		if strings.Count(s, old) != 1 {
			t.Fatalf("update.yml does not have %q once", old)
		}
		return strings.Replace(s, old, planted, 1)
	})
	r := f.run(t)
	if r.Err == nil {
		fail(t, r, "act succeeded with the fixed add-paths")
	}
	if b := f.Remote.Branches(t); slices.Contains(b, updateBranch) {
		fail(t, r, "the remote has %s although git add was refused", updateBranch)
	}
	if !strings.Contains(r.Log, "pathspec 'pipeline/lock/profiles/*.tar.gz' did not match any files") {
		fail(t, r, "the log does not show git add refusing the profiles pathspec")
	}
}

// partialFixture: the default lock has PCRE2 one release behind (new, its key not vendored)
// and OpenSSL one release behind whose new release is signed by a key the lock does not pin
// (refused): check-updates exits 3 for that lock.
func partialFixture(t *testing.T, edit func(string) string) *updateFixture {
	t.Helper()
	f := newUpdateFixtureKeys(t, []string{lock.PCRE2, lock.OpenSSL}, []string{lock.PCRE2}, edit)
	l, err := lock.Load(f.Scenario.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	c := l.MustComponent(lock.OpenSSL)
	tarball := f.Scenario.Tarballs[strings.ReplaceAll(c.FileName(), c.Version, "3.5.4")]
	if tarball == nil {
		t.Fatalf("the scenario serves no OpenSSL 3.5.4 stand-in")
	}
	other := upstreamtest.NewKey(t, "Not OpenSSL's Signer")
	sig := strings.ReplaceAll(c.SignatureFileName(), c.Version, "3.5.4")
	if strings.HasSuffix(sig, ".sig") {
		f.Scenario.Upstream.SetFile(sig, other.SignBinaryAt(t, tarball, upstreamtest.NewSignedAt))
	} else {
		f.Scenario.Upstream.SetFile(sig, other.SignAt(t, tarball, upstreamtest.NewSignedAt))
	}
	f.Scenario.Upstream.SetFile(other.Fingerprint+".asc", other.Armored)
	return f
}

// TestUpdatePartial: one component refused while another of the same lock is new: the run
// is red (the refused job), and the new one is proposed all the same: the branch carries the
// default lock with PCRE2 at 10.46 and OpenSSL where it was, and the pull request is asked for.
func TestUpdatePartial(t *testing.T) {
	f := partialFixture(t, nil)
	r := f.run(t)
	if r.Err == nil {
		fail(t, r, "act succeeded, want the run red for the refusal")
	}
	// The annotation, or the job summary act prints from its file (act's host mode: report_test.go).
	if !strings.Contains(r.Log, "check-updates refused: stack.lock.json: ") && !strings.Contains(r.Log, "Summary - ### Refused: stack.lock.json: ") {
		fail(t, r, "the refused job does not name the refusal")
	}
	if b := f.Remote.Branches(t); !slices.Contains(b, updateBranch) {
		fail(t, r, "the remote has the branches %v, no %s: the update that passed was not proposed", b, updateBranch)
		return
	}
	before, err := lock.Parse([]byte(git(t, f.Remote.Bare, "show", "main:pipeline/lock/stack.lock.json")))
	if err != nil {
		t.Fatal(err)
	}
	after, err := lock.Parse([]byte(git(t, f.Remote.Bare, "show", updateBranch+":pipeline/lock/stack.lock.json")))
	if err != nil {
		t.Fatal(err)
	}
	if v := after.MustComponent(lock.PCRE2).Version; v != "10.46" {
		t.Errorf("pcre2 on the branch is %s, want 10.46", v)
	}
	if a, b := after.MustComponent(lock.OpenSSL), before.MustComponent(lock.OpenSSL); a.Version != b.Version || a.SHA256 != b.SHA256 {
		t.Errorf("the refused OpenSSL moved from %s to %s", b.Version, a.Version)
	}
	created := false
	for _, c := range f.Remote.API.Calls() {
		created = created || (c.Method == "POST" && c.Path == "/repos/nginx-forge/nginx-forge/pulls")
		// PCRE2 10.46 fixes no advisory of the snapshot: an ordinary update, not labelled
		// security.
		if c.Method == "POST" && strings.HasSuffix(c.Path, "/issues/1/labels") {
			if labels, _ := c.Body["labels"].([]any); !slices.Equal(labels, []any{"dependencies"}) {
				t.Errorf("the pull request is labelled %v, want dependencies alone", c.Body["labels"])
			}
		}
	}
	if !created {
		fail(t, r, "no pull request was asked for; API calls: %+v", f.Remote.API.Calls())
	}
}

// TestUpdatePartialThroughGoRunFails plants issue 36's other defect back (check-updates
// through go run, which turns its exit 3 into 1): the lock's step then counts as failed and
// the update that passed is not proposed (no branch).
func TestUpdatePartialThroughGoRunFails(t *testing.T) {
	old := `"$RUNNER_TEMP/nginx-forge-ci" check-updates --write --lock pipeline/lock/stack.lock.json`
	f := partialFixture(t, func(s string) string {
		if strings.Count(s, old) != 1 {
			t.Fatalf("update.yml does not have %q once", old)
		}
		return strings.Replace(s, old, "go run ./ci check-updates --write --lock pipeline/lock/stack.lock.json", 1)
	})
	r := f.run(t)
	if r.Err == nil {
		fail(t, r, "act succeeded")
	}
	if b := f.Remote.Branches(t); slices.Contains(b, updateBranch) {
		fail(t, r, "the remote has %s: with go run the partial update was still proposed, so this test shows nothing", updateBranch)
	}
	// The annotation, or the job summary act prints from its file (act's host mode: report_test.go).
	if !strings.Contains(r.Log, "check-updates failed for stack.lock.json") && !strings.Contains(r.Log, "Summary - ### Check failed: stack.lock.json") {
		fail(t, r, "the failed job does not name stack.lock.json")
	}
}
