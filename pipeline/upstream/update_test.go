package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

func check(t *testing.T, s *upstreamtest.Scenario) *upstream.Report {
	t.Helper()
	return checkLock(t, s.LockFile, s.Upstream, s.Registry)
}

// checkLock checks lockFile against the fake upstream up and the registry at registry.
func checkLock(t *testing.T, lockFile string, up *upstreamtest.Server, registry string) *upstream.Report {
	t.Helper()
	l, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	ch := &upstream.Checker{
		Releases: upstream.NewClient(upstream.WithGitHubAPI(up.GitHubAPI()), upstream.WithNginxOrg(up.NginxOrg()), upstream.WithRetries(1, time.Millisecond)),
		Images:   upstream.NewImageResolver(upstream.WithRegistry(registry)),
		Now:      func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) },
	}
	rep, err := ch.Check(context.Background(), l)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// updater is the production Updater for the scenario, trusting its pinned test key as a
// vendored key (the keys in pipeline/lock/keys cannot sign test tarballs).
func updater(s *upstreamtest.Scenario, f upstream.Fetcher) *upstream.Updater {
	return &upstream.Updater{
		Fetcher:   f,
		Images:    upstream.NewImageResolver(upstream.WithRegistry(s.Registry)),
		Vendored:  s.Vendored,
		Platforms: buildPlatforms,
		Mirror:    s.Upstream.Mirror(),
	}
}

func fetcher(t *testing.T, s *upstreamtest.Scenario) (*source.Fetcher, string) {
	cache := t.TempDir()
	return source.New(source.WithMirror(s.Upstream.Mirror()), source.WithCacheDir(cache), source.WithRetries(0)), cache
}

func TestCheckReport(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	rep := check(t, s)
	got := map[string]upstream.ComponentReport{}
	for _, c := range rep.Components {
		got[c.Name] = c
	}
	for name, want := range map[string]struct {
		latest string
		update bool
		eol    string
	}{
		lock.Nginx:   {"1.26.3", false, "superseded by 1.28"},
		lock.OpenSSL: {upstreamtest.NewOpenSSL, true, "2030-04-08 (LTS)"},
		lock.PCRE2:   {"10.46", false, ""},
		lock.Zlib:    {"1.3.1", false, ""},
	} {
		c := got[name]
		if c.Latest != want.latest || c.Update != want.update || c.EOL != want.eol || c.Source != "github" {
			t.Errorf("%s: %+v; want latest %s update %v EOL %q from github", name, c, want.latest, want.update, want.eol)
		}
	}
	if len(rep.Images) != 2 || rep.Images[0].Latest != s.BuilderDigest || rep.Images[1].Latest != s.RuntimeDigest ||
		!rep.Images[0].Update || !rep.Images[1].Update {
		t.Errorf("images = %+v; want builder %s and runtime %s, both updates (the lock pins no digest)", rep.Images, s.BuilderDigest, s.RuntimeDigest)
	}
	if !rep.Changed() {
		t.Error("Changed() = false")
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "nginx 1.26 is no longer maintained") {
		t.Errorf("warnings %q lack the superseded nginx branch", w)
	}
}

// With nginx's GitHub listing failing, nginx.org's download page is used and the fallback is
// reported as a warning.
func TestCheckFallsBackToNginxOrg(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	html, err := os.ReadFile(filepath.Join("testdata", "nginx.org", "download.html"))
	if err != nil {
		t.Fatal(err)
	}
	s.Upstream.SetNginxOrg(html)
	s.Upstream.FailGitHub("nginx/nginx", 403)
	rep := check(t, s)
	n := rep.Components[3]
	if n.Name != lock.Nginx || n.Source != "nginx.org" || n.Latest != "1.26.3" || n.EOL != "superseded by 1.28" {
		t.Errorf("nginx = %+v; want 1.26.3 from nginx.org, superseded by 1.28", n)
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "used nginx.org") || !strings.Contains(w, "rate limit") {
		t.Errorf("warnings %q do not report the fallback and its cause", w)
	}
}

// The lock is already current: nothing changes, and a second run after --write finds nothing.
func TestCheckIdempotentAfterUpdate(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	f, _ := fetcher(t, s)
	if _, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, check(t, s)); err != nil {
		t.Fatal(err)
	}
	after := s.LockBytes(t)
	rep := check(t, s)
	if rep.Changed() {
		t.Errorf("a second check still finds changes: %+v %+v", rep.Components, rep.Images)
	}
	applied, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, rep)
	if err != nil || len(applied) != 0 || !bytes.Equal(after, s.LockBytes(t)) {
		t.Errorf("second update: applied %v, err %v, lock changed %v", applied, err, !bytes.Equal(after, s.LockBytes(t)))
	}
}

func TestUpdateWritesVerifiedRelease(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	before := s.LockBytes(t)
	f, cache := fetcher(t, s)
	applied, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, check(t, s))
	if err != nil {
		t.Fatalf("UpdateFile: %v", err)
	}
	if len(applied) != 3 || applied[0].Name != lock.OpenSSL || !applied[0].Signed || applied[0].SignedBy != s.Pinned.Fingerprint {
		t.Errorf("applied = %+v; want OpenSSL signed by %s, then the two images", applied, s.Pinned.Fingerprint)
	}

	// The expected lock: the old one with exactly these fields changed.
	want, err := lock.Parse(before)
	if err != nil {
		t.Fatal(err)
	}
	o := want.MustComponent(lock.OpenSSL)
	o.Version = upstreamtest.NewOpenSSL
	o.URL = "https://github.com/openssl/openssl/releases/download/openssl-3.5.8/openssl-3.5.8.tar.gz"
	o.SHA256 = upstreamtest.SHA256(s.Tarball)
	o.Signature.URL = o.URL + ".asc"
	want.SetComponent(o)
	want.Images.Builder.Digest = s.BuilderDigest
	// The builder's archive snapshot moves with its digest, to the check's day (its clock).
	want.Images.Builder.Snapshot = "20261202T000000Z"
	want.Images.Runtime.Digest = s.RuntimeDigest
	wantBytes, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	after := s.LockBytes(t)
	if !bytes.Equal(after, wantBytes) {
		t.Fatalf("lock after update:\n%s\nwant:\n%s", after, wantBytes)
	}
	// A minimal diff: four lines edited in place (version, url, sha256, signature url) and
	// one digest line added per image, whose "ref" line above gains JSON's comma, and the
	// builder's snapshot line after its digest; nothing reordered or reformatted.
	removed, added := lineDiff(string(before), string(after))
	if len(removed) != 6 || len(added) != 9 {
		t.Errorf("diff removes %d and adds %d lines, want 6 and 9:\n-%s\n+%s", len(removed), len(added), strings.Join(removed, "\n-"), strings.Join(added, "\n+"))
	}
	// The verified tarball is in the source cache, so the build that follows needs no download.
	if _, err := os.Stat(filepath.Join(cache, "sha256", o.SHA256, upstreamtest.TarballName)); err != nil {
		t.Errorf("the verified tarball is not cached: %v", err)
	}
	// And the fetcher the build uses accepts the new lock entry.
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.Fetch(context.Background(), l.MustComponent(lock.OpenSSL))
	if err != nil || !v.Signed {
		t.Errorf("Fetch of the updated entry: %+v, %v", v, err)
	}
}

func TestUpdateRefusesUnverifiedRelease(t *testing.T) {
	someoneElse := upstreamtest.NewKey(t, "Someone Else")
	for _, tc := range []struct {
		name    string
		break_  func(t *testing.T, s *upstreamtest.Scenario)
		wantErr []string
	}{
		{"tampered tarball", func(t *testing.T, s *upstreamtest.Scenario) { s.Tamper() }, []string{"does not verify"}},
		{"signature by an unpinned key", func(t *testing.T, s *upstreamtest.Scenario) {
			s.SignWith(t, someoneElse)
		}, []string{"not one of the signers pinned", "go run ./ci lock trust openssl " + someoneElse.Fingerprint}},
		{"garbage signature", func(t *testing.T, s *upstreamtest.Scenario) {
			s.Upstream.SetFile(upstreamtest.SignatureName, []byte("not a signature"))
		}, []string{"reading signature"}},
		{"missing signature", func(t *testing.T, s *upstreamtest.Scenario) {
			s.Upstream.RemoveFile(upstreamtest.SignatureName)
		}, []string{"404"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			tc.break_(t, s)
			f, cache := fetcher(t, s)
			expectRefusal(t, updater(s, f), s.LockFile, check(t, s), append([]string{"openssl 3.5.8: refused"}, tc.wantErr...)...)
			// Nothing unverified reached the cache.
			entries, _ := os.ReadDir(filepath.Join(cache, "sha256"))
			if len(entries) != 0 {
				t.Errorf("the cache holds %d entries after a failed verification", len(entries))
			}
		})
	}
}

type failingFetcher struct{}

func (failingFetcher) FetchNew(context.Context, lock.Component) (source.Verified, error) {
	return source.Verified{}, errors.New("boom")
}

func (failingFetcher) Fetch(context.Context, lock.Component) (source.Verified, error) {
	return source.Verified{}, errors.New("boom")
}

func (failingFetcher) SignerKey(context.Context, string) (source.SignerKey, error) {
	return source.SignerKey{}, errors.New("boom")
}

func (failingFetcher) RefreshKey(context.Context, string) (source.SignerKey, error) {
	return source.SignerKey{}, errors.New("boom")
}

// A fetcher that claims success without a signature for a component that pins one is not
// trusted either.
type unsignedFetcher struct{}

func (unsignedFetcher) FetchNew(_ context.Context, c lock.Component) (source.Verified, error) {
	return source.Verified{Name: c.Name, Version: c.Version, SHA256: strings.Repeat("b", 64)}, nil
}

func (f unsignedFetcher) Fetch(ctx context.Context, c lock.Component) (source.Verified, error) {
	return f.FetchNew(ctx, c)
}

func (unsignedFetcher) SignerKey(context.Context, string) (source.SignerKey, error) {
	return source.SignerKey{}, errors.New("no keys here")
}

func (unsignedFetcher) RefreshKey(context.Context, string) (source.SignerKey, error) {
	return source.SignerKey{}, errors.New("no keys here")
}

func TestApplyNeverChangesVersionWithoutChecksum(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	rep := check(t, s)
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []upstream.Fetcher{failingFetcher{}, unsignedFetcher{}} {
		out, _, refused, err := updater(s, f).Apply(context.Background(), l, rep)
		if err != nil {
			t.Fatalf("%T: Apply: %v", f, err)
		}
		// The component is refused and stays as it was; the images (not fetched) still move.
		if len(refused) != 1 || refused[0].Name != lock.OpenSSL {
			t.Errorf("%T: refused %v, want openssl alone", f, refused)
		}
		if c := out.MustComponent(lock.OpenSSL); c.Version != "3.5.7" || c.SHA256 != l.MustComponent(lock.OpenSSL).SHA256 {
			t.Errorf("%T: the new lock has openssl %s %s; want the locked entry", f, c.Version, c.SHA256)
		}
	}
	if l.MustComponent(lock.OpenSSL).Version != "3.5.7" {
		t.Errorf("Apply modified its input lock")
	}
}

// lineDiff returns the lines only in a and only in b, by longest common subsequence.
func lineDiff(a, b string) (removed, added []string) {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			removed = append(removed, x[i])
			i++
		default:
			added = append(added, y[j])
			j++
		}
	}
	removed = append(removed, x[i:]...)
	added = append(added, y[j:]...)
	return removed, added
}

// GitHub answering, but with no nginx release tags at all, also falls back to nginx.org.
func TestCheckFallsBackToNginxOrgOnEmptyList(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	html, err := os.ReadFile(filepath.Join("testdata", "nginx.org", "download.html"))
	if err != nil {
		t.Fatal(err)
	}
	s.Upstream.SetNginxOrg(html)
	s.Upstream.SetGitHub("nginx/nginx", "releases", upstreamtest.ReleasesJSON("nginx/nginx"))
	s.Upstream.SetGitHub("nginx/nginx", "tags", upstreamtest.TagsJSON("nginx/nginx", "before-1.0-branch"))
	rep := check(t, s)
	if n := rep.Components[3]; n.Source != "nginx.org" || n.Latest != "1.26.3" {
		t.Errorf("nginx = %+v; want 1.26.3 from nginx.org", n)
	}
}

// buildPlatforms are the platforms builds target, as ci check-updates passes them
// (Run.Platforms, from pipeline/plan).
var buildPlatforms = []string{"linux/amd64", "linux/arm64"}
