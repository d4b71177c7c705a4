package upstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// checkDefault checks the scenario's lock against its recorded upstream.
func checkDefault(t *testing.T, s *upstreamtest.DefaultLockScenario) *upstream.Report {
	t.Helper()
	return checkLock(t, s.LockFile, s.Upstream, s.Registry)
}

// updaterDefault is the production Updater for the scenario, trusting its test keys as
// vendored ones.
func updaterDefault(t *testing.T, s *upstreamtest.DefaultLockScenario) *upstream.Updater {
	return &upstream.Updater{
		Fetcher:   source.New(source.WithMirror(s.Upstream.Mirror()), source.WithCacheDir(t.TempDir()), source.WithRetries(0)),
		Images:    upstream.NewImageResolver(upstream.WithRegistry(s.Registry)),
		Vendored:  s.Vendored,
		Platforms: buildPlatforms,
		Mirror:    s.Upstream.Mirror(),
	}
}

func components(rep *upstream.Report) map[string]upstream.ComponentReport {
	out := map[string]upstream.ComponentReport{}
	for _, c := range rep.Components {
		out[c.Name] = c
	}
	return out
}

// The optional components a lock has are looked up like the others, on track "latest":
// brotli and zstd from their GitHub releases and tags, the two modules from their tags only.
// ngx_brotli's only release is the locked release candidate: nothing to update, no error.
func TestCheckOptionalComponents(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	s.AddOptional(t)
	got := components(checkDefault(t, s))
	for name, want := range map[string]struct {
		latest string
		update bool
	}{
		lock.Brotli:          {"1.2.0", true},
		lock.NgxBrotli:       {"1.0.0rc", false},
		lock.Zstd:            {"1.5.7", true},
		lock.ZstdNginxModule: {"0.1.1", true},
	} {
		c, ok := got[name]
		if !ok {
			t.Errorf("the report has no %s", name)
			continue
		}
		if c.Current != upstreamtest.OptionalLocked[name] || c.Latest != want.latest || c.Update != want.update || c.Track != upstream.TrackLatest || c.Source != "github" {
			t.Errorf("%s: %+v; want %s -> %s (update %v) on track latest from github", name, c, upstreamtest.OptionalLocked[name], want.latest, want.update)
		}
	}
}

// A lock without the optional components (the shipped one) does not look them up at all.
func TestCheckSkipsAbsentOptionalComponents(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	rep := checkDefault(t, s)
	var names []string
	for _, c := range rep.Components {
		names = append(names, c.Name)
	}
	// The default lock's choices: zlib and OpenSSL, not zlib-ng and AWS-LC.
	want := []string{lock.Zlib, lock.PCRE2, lock.OpenSSL, lock.Nginx}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("report components = %v, want only %v", names, want)
	}
	for _, r := range s.Upstream.Requests() {
		for _, repo := range []string{"google/brotli", "google/ngx_brotli", "facebook/zstd", "tokers/zstd-nginx-module", "aws/aws-lc", "zlib-ng/zlib-ng"} {
			if strings.Contains(r.Path, "/repos/"+repo+"/") {
				t.Errorf("looked up %s, which the lock does not have: %s", repo, r.Path)
			}
		}
	}
}

// check-updates --write moves the optional components like the others: zstd's new release
// verified against the pinned (vendored) signer and dated after the locked one's; brotli and
// zstd-nginx-module, whose upstreams sign nothing, stay unsigned with their reasons, and no
// signature is looked for; each tarball's top directory checked (GitHub's archive of
// tokers/zstd-nginx-module unpacks into zstd-nginx-module-0.1.1/). The PR body says all of it.
func TestUpdateOptionalComponents(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	s.AddOptional(t)
	before, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := updaterDefault(t, s).UpdateFile(context.Background(), s.LockFile, checkDefault(t, s))
	if err != nil {
		t.Fatalf("UpdateFile: %v", err)
	}
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]upstream.Applied{}
	for _, a := range applied {
		byName[a.Name] = a
	}

	for _, tc := range []struct{ name, url, top string }{
		{lock.Brotli, "https://github.com/google/brotli/archive/refs/tags/v1.2.0.tar.gz", "brotli-1.2.0"},
		{lock.ZstdNginxModule, "https://github.com/tokers/zstd-nginx-module/archive/refs/tags/0.1.1.tar.gz", "zstd-nginx-module-0.1.1"},
	} {
		c, a := l.MustComponent(tc.name), byName[tc.name]
		old := before.MustComponent(tc.name)
		if c.Version != upstreamtest.OptionalTargets[tc.name] || c.URL != tc.url || c.SHA256 != upstreamtest.SHA256(s.Tarballs[c.FileName()]) ||
			c.Signature != nil || c.Unsigned != old.Unsigned || a.TopDir != tc.top || a.Signed || a.NoSignatureAt != "" {
			t.Errorf("%s = %+v, applied %+v; want %s at %s, the served checksum, still unsigned with its reason, top directory %s",
				tc.name, c, a, upstreamtest.OptionalTargets[tc.name], tc.url, tc.top)
		}
	}
	z, za := l.MustComponent(lock.Zstd), byName[lock.Zstd]
	const zURL = "https://github.com/facebook/zstd/releases/download/v1.5.7/zstd-1.5.7.tar.gz"
	if z.Version != "1.5.7" || z.URL != zURL || z.SHA256 != upstreamtest.SHA256(s.Tarballs["zstd-1.5.7.tar.gz"]) || z.Signature == nil ||
		z.Signature.URL != zURL+".sig" || strings.Join(z.Signature.Fingerprints, ",") != s.Keys[lock.Zstd].Fingerprint || z.Unsigned != "" {
		t.Errorf("zstd = %+v (signature %+v); want 1.5.7 at %s with its .sig pinned to %s", z, z.Signature, zURL, s.Keys[lock.Zstd].Fingerprint)
	}
	if !za.Signed || !za.SignerVendored || za.SignedBy != s.Keys[lock.Zstd].Fingerprint || !za.SignedAt.Equal(upstreamtest.NewSignedAt) ||
		!za.LockedSignedAt.Equal(upstreamtest.LockedSignedAt) || za.TopDir != "zstd-1.5.7" {
		t.Errorf("zstd applied = %+v", za)
	}
	if nb := l.MustComponent(lock.NgxBrotli); nb != before.MustComponent(lock.NgxBrotli) {
		t.Errorf("ngx_brotli changed: %+v", nb)
	}
	if _, ok := byName[lock.NgxBrotli]; ok {
		t.Error("ngx_brotli was applied although it is current")
	}

	// Nothing is asked of upstreams that publish no signatures.
	for _, r := range s.Upstream.Requests() {
		if r.Method == "HEAD" && !strings.HasSuffix(r.Path, ".asc") && !strings.HasSuffix(r.Path, ".sig") {
			t.Errorf("looked for a signature of an upstream that publishes none: %s %s", r.Method, r.Path)
		}
	}

	body := upstream.PRBody(applied, nil, nil)
	for _, want := range []string{
		"### brotli 1.1.0 → 1.2.0",
		// The loopback mirror is plain HTTP: the body must not call it an HTTPS download.
		"| signature | **none**: the checksum rests on the plain-HTTP download from " + strings.TrimPrefix(s.Upstream.URL, "http://") +
			" alone, which has no transport security (anyone on the path could have altered it); the lock says why: " + before.MustComponent(lock.Brotli).Unsigned + " |",
		"| signature lookup | none: brotli's upstream publishes no signatures, so the component stays unsigned |",
		"| top directory | `brotli-1.2.0/` (matches the version) |",
		"### zstd 1.5.6 → 1.5.7",
		"| signature file | " + zURL + ".sig |",
		"| signer | `" + s.Keys[lock.Zstd].Fingerprint + "`, vendored (`pipeline/lock/keys/" + s.Keys[lock.Zstd].Fingerprint + ".asc`) |",
		"| signature date | " + upstreamtest.NewSignedAt.UTC().Format(time.RFC3339) + " (not older than the locked 1.5.6's, " + upstreamtest.LockedSignedAt.UTC().Format(time.RFC3339) + ") |",
		"| top directory | `zstd-1.5.7/` (matches the version) |",
		"### zstd_nginx_module 0.1.0 → 0.1.1",
		"| top directory | `zstd-nginx-module-0.1.1/` (matches the version) |",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "ngx_brotli") {
		t.Errorf("PR body mentions ngx_brotli, which did not change:\n%s", body)
	}
}

// The refusals hold for the optional components too, and leave their entries as they were.
func TestUpdateRefusesOptionalRelease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		break_   func(t *testing.T, s *upstreamtest.DefaultLockScenario, u *upstream.Updater)
		wantErrs []string
	}{
		{"zstd signature older than the locked release's", func(t *testing.T, s *upstreamtest.DefaultLockScenario, u *upstream.Updater) {
			tb := s.Tarballs["zstd-1.5.7.tar.gz"]
			s.Upstream.SetFile("zstd-1.5.7.tar.gz.sig", s.Keys[lock.Zstd].SignBinaryAt(t, tb, upstreamtest.LockedSignedAt.Add(-time.Minute)))
		}, []string{"zstd 1.5.7: refused", "before the locked 1.5.6's"}},
		{"zstd tarball of another version", func(t *testing.T, s *upstreamtest.DefaultLockScenario, u *upstream.Updater) {
			tb := upstreamtest.Tarball(t, "zstd-1.5.6", map[string]string{"README": "old\n"})
			s.Upstream.SetFile("zstd-1.5.7.tar.gz", tb)
			s.Upstream.SetFile("zstd-1.5.7.tar.gz.sig", s.Keys[lock.Zstd].SignBinaryAt(t, tb, upstreamtest.NewSignedAt))
		}, []string{"zstd 1.5.7: refused", "unpacks into zstd-1.5.6/, not zstd-1.5.7/"}},
		{"zstd-nginx-module archive under the component's name", func(t *testing.T, s *upstreamtest.DefaultLockScenario, u *upstream.Updater) {
			s.Upstream.SetFile("0.1.1.tar.gz", upstreamtest.Tarball(t, "zstd_nginx_module-0.1.1", map[string]string{"config": "x\n"}))
		}, []string{"zstd_nginx_module 0.1.1: refused", "unpacks into zstd_nginx_module-0.1.1/, not zstd-nginx-module-0.1.1/"}},
		{"brotli reason names the locked version", func(t *testing.T, s *upstreamtest.DefaultLockScenario, u *upstream.Updater) {
			setUnsigned(t, s.LockFile, lock.Brotli, "google/brotli publishes no signatures; this is GitHub's archive of v1.1.0")
		}, []string{"brotli 1.2.0: refused", "names the locked version 1.1.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := upstreamtest.NewDefaultLockScenario(t)
			s.AddOptional(t)
			u := updaterDefault(t, s)
			tc.break_(t, s, u)
			expectRefusal(t, u, s.LockFile, checkDefault(t, s), tc.wantErrs...)
		})
	}
}

// The signer a lock pins for zstd (OptionalComponents) is vendored, so a real zstd update is
// not refused as "not vendored".
func TestZstdSignerIsVendored(t *testing.T) {
	for _, c := range upstreamtest.OptionalComponents() {
		if c.Name != lock.Zstd {
			continue
		}
		for _, fp := range c.Signature.Fingerprints {
			if _, ok := lock.VendoredKey(fp); !ok {
				t.Errorf("zstd's pinned signer %s is not vendored in %s", fp, lock.KeysDir)
			}
		}
	}
}
