package upstreamtest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The newest releases on each default-lock track in the recorded GitHub responses
// (pipeline/upstream/testdata/github): nginx's newest stable (even minor) release, OpenSSL's
// newest release of an LTS branch (3.5.9 is marked pre-release there and 3.5.10 draft, so
// neither counts), and PCRE2's latest. zlib's latest is the locked 1.3.1.
var recordedTargets = map[string]string{
	lock.Nginx:   "1.28.0",
	lock.OpenSSL: "3.5.4",
	lock.PCRE2:   "10.46",
}

// DefaultLockScenario is the seed lock (pipeline/lock/seed.lock.json: the design card's
// stack, nginx 1.26.2 and OpenSSL 3.3.1 on the "stable" and "lts" tracks, which the shipped
// lock pinned until it moved to nginx 1.30) against the recorded upstream, whose answers are
// of that time: GitHub and nginx.org answer with the recorded responses, and the mirror
// serves, for every locked release and every recordedTargets release, a stand-in tarball
// (<name>-<version>/ inside) signed by a test key per project, the new releases later than
// the locked ones. The lock copy keeps the shipped versions, tracks and URLs; only its
// checksums and signer fingerprints point at the stand-ins and their keys (upstream's real
// tarballs and private keys are not here). Vendored lists the test keys, to be trusted as
// vendored (upstream.Updater.Vendored).
type DefaultLockScenario struct {
	Upstream *Server
	Registry string
	LockFile string
	Keys     map[string]*Key   // per component
	Tarballs map[string][]byte // file name -> the stand-in served under it
	Vendored []string
	// BuilderDigest and RuntimeDigest are the index digests the base image tags point at.
	BuilderDigest, RuntimeDigest string
}

// seedLockPath is the seed lock's path in a checkout.
const seedLockPath = "pipeline/lock/seed.lock.json"

// NewDefaultLockScenario builds it for the test's lifetime.
func NewDefaultLockScenario(t testing.TB) *DefaultLockScenario {
	t.Helper()
	s := &DefaultLockScenario{Upstream: New(t), Keys: map[string]*Key{}, Tarballs: map[string][]byte{}}
	ServeRecorded(t, s.Upstream, filepath.Join(testenv.RepoRoot(), "pipeline", "upstream", "testdata"))

	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), seedLockPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range lock.ComponentOrder {
		c, ok := l.Component(name)
		if !ok {
			continue // the other choice of TLS library or zlib
		}
		k := NewKey(t, name+" Test Signer")
		s.Keys[name] = k
		s.Vendored = append(s.Vendored, k.Fingerprint)
		sum := s.standIn(t, c, c.Version, LockedSignedAt)
		c.SHA256 = sum
		if c.Signature != nil {
			c.Signature.Fingerprints = []string{k.Fingerprint}
		}
		l.SetComponent(c)
		if v, ok := recordedTargets[name]; ok {
			s.standIn(t, c, v, NewSignedAt)
		}
	}
	s.LockFile, s.Registry, s.BuilderDigest, s.RuntimeDigest = lockAndBases(t, l, "stack.lock.json")
	return s
}

// lockAndBases writes l to a fresh file named name and serves a stand-in registry holding
// l's builder and runtime images (amd64 and arm64 indexes): what a scenario hands the code
// under test. It returns the lock file, the registry's host:port and the two index digests.
func lockAndBases(t testing.TB, l *lock.Lock, name string) (lockFile, registryHost, builderDigest, runtimeDigest string) {
	t.Helper()
	lockFile = filepath.Join(t.TempDir(), name)
	if err := l.Write(lockFile); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	registryHost = strings.TrimPrefix(reg.URL, "http://")
	builderDigest = PushIndex(t, registryHost, l.Images.Builder.Ref, "linux/amd64", "linux/arm64/v8")
	runtimeDigest = PushIndex(t, registryHost, l.Images.Runtime.Ref, "linux/amd64", "linux/arm64/v8")
	return lockFile, registryHost, builderDigest, runtimeDigest
}

// zstdSigner is the fingerprint of zstd's release signing key, vendored in
// pipeline/lock/keys: what a lock pins for zstd's signature.
const zstdSigner = "4EF4AC63455FC9F4545D9B7DEF8FE99528B52FFD"

// OptionalLocked are the versions of the optional components AddOptional pins: one release
// behind the recorded upstream's newest (OptionalTargets), except ngx_brotli, whose only
// release is the locked 1.0.0rc.
var OptionalLocked = map[string]string{
	lock.Brotli:          "1.1.0",
	lock.NgxBrotli:       "1.0.0rc",
	lock.Zstd:            "1.5.6",
	lock.ZstdNginxModule: "0.1.0",
}

// OptionalTargets are the newest releases of the optional components in the recorded
// GitHub responses (track "latest").
var OptionalTargets = map[string]string{
	lock.Brotli:          "1.2.0",
	lock.Zstd:            "1.5.7",
	lock.ZstdNginxModule: "0.1.1",
}

// OptionalComponents are lock entries for the optional components at OptionalLocked, from
// the URLs a lock pins upstream: GitHub's archive of the release tag for brotli, ngx_brotli
// and zstd-nginx-module, which publish no signatures (so each says so, without naming a
// version), and zstd's release asset with its .sig by zstdSigner. The checksums are
// placeholders: AddOptional sets the stand-ins'.
func OptionalComponents() []lock.Component {
	const none = "0000000000000000000000000000000000000000000000000000000000000000"
	return []lock.Component{
		{Name: lock.Brotli, Version: OptionalLocked[lock.Brotli], Track: "latest", SHA256: none,
			URL:      "https://github.com/google/brotli/archive/refs/tags/v1.1.0.tar.gz",
			Unsigned: "google/brotli publishes no signatures; the SHA-256 is that of GitHub's archive of the release tag"},
		{Name: lock.NgxBrotli, Version: OptionalLocked[lock.NgxBrotli], Track: "latest", SHA256: none,
			URL:      "https://github.com/google/ngx_brotli/archive/refs/tags/v1.0.0rc.tar.gz",
			Unsigned: "google/ngx_brotli publishes no signatures; the SHA-256 is that of GitHub's archive of the release tag"},
		{Name: lock.Zstd, Version: OptionalLocked[lock.Zstd], Track: "latest", SHA256: none,
			URL: "https://github.com/facebook/zstd/releases/download/v1.5.6/zstd-1.5.6.tar.gz",
			Signature: &lock.Signature{URL: "https://github.com/facebook/zstd/releases/download/v1.5.6/zstd-1.5.6.tar.gz.sig",
				Fingerprints: []string{zstdSigner}}},
		{Name: lock.ZstdNginxModule, Version: OptionalLocked[lock.ZstdNginxModule], Track: "latest", SHA256: none,
			URL:      "https://github.com/tokers/zstd-nginx-module/archive/refs/tags/0.1.0.tar.gz",
			Unsigned: "tokers/zstd-nginx-module publishes no signatures; the SHA-256 is that of GitHub's archive of the release tag"},
	}
}

// optionalTopDirs are the directories GitHub's archives of the module repositories unpack
// into, where they are not the component's name (written out here rather than taken from
// the upstream package, so that a wrong name there fails the tests).
var optionalTopDirs = map[string]string{lock.ZstdNginxModule: "zstd-nginx-module"}

// AddOptional adds OptionalComponents to the scenario's lock and serves stand-ins of their
// locked and OptionalTargets releases; zstd's are signed by a test key (in Keys and Vendored)
// that the lock pins in place of zstdSigner.
func (s *DefaultLockScenario) AddOptional(t testing.TB) {
	t.Helper()
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range OptionalComponents() {
		if c.Signature != nil {
			k := NewKey(t, c.Name+" Test Signer")
			s.Keys[c.Name] = k
			s.Vendored = append(s.Vendored, k.Fingerprint)
			c.Signature.Fingerprints = []string{k.Fingerprint}
		}
		c.SHA256 = s.standIn(t, c, c.Version, LockedSignedAt)
		l.SetComponent(c)
		if v, ok := OptionalTargets[c.Name]; ok {
			s.standIn(t, c, v, NewSignedAt)
		}
	}
	if err := l.Write(s.LockFile); err != nil {
		t.Fatal(err)
	}
}

// standIn serves component c's release v (file names from c's URLs with the version
// replaced) signed by c's test key at the given time, and returns the tarball's SHA-256.
func (s *DefaultLockScenario) standIn(t testing.TB, c lock.Component, v string, at time.Time) string {
	t.Helper()
	file := strings.ReplaceAll(c.FileName(), c.Version, v)
	dir := c.Name
	if d, ok := optionalTopDirs[c.Name]; ok {
		dir = d
	}
	tb := Tarball(t, dir+"-"+v, map[string]string{
		"README": fmt.Sprintf("%s %s (a test stand-in)\n", c.Name, v),
	})
	s.Tarballs[file] = tb
	s.Upstream.SetFile(file, tb)
	if c.Signature != nil {
		sig := strings.ReplaceAll(c.SignatureFileName(), c.Version, v)
		k := s.Keys[c.Name]
		if strings.HasSuffix(sig, ".sig") {
			s.Upstream.SetFile(sig, k.SignBinaryAt(t, tb, at))
		} else {
			s.Upstream.SetFile(sig, k.SignAt(t, tb, at))
		}
		s.Upstream.SetFile(k.Fingerprint+".asc", k.Armored)
	}
	return SHA256(tb)
}

// recordedRepos are the repositories whose GitHub API responses are recorded under
// pipeline/upstream/testdata/github: the default choices', the other TLS library's and
// zlib's (AWS-LC, zlib-ng) and the optional components'.
var recordedRepos = []string{"nginx/nginx", "openssl/openssl", "PCRE2Project/pcre2", "madler/zlib",
	"google/brotli", "google/ngx_brotli", "facebook/zstd", "tokers/zstd-nginx-module",
	"aws/aws-lc", "zlib-ng/zlib-ng"}

// ServeRecorded makes s answer with the GitHub API responses recorded under
// dir/github (<owner>-<repo>-releases.json and <owner>-<repo>-tags-<page>.json, pages linked
// like GitHub's) and nginx.org's download page recorded as dir/nginx.org/download.html. A
// repository whose releases are its tags (google/ngx_brotli, tokers/zstd-nginx-module) has
// no releases file. The git database objects recorded under dir/github/git/<owner>/<repo>/
// (ref/tags/<tag>.json, tags/<sha>.json, commits/<sha>.json) answer
// /repos/<owner>/<repo>/git/ref/tags/<tag> and the like.
func ServeRecorded(t testing.TB, s *Server, dir string) {
	t.Helper()
	serveRecordedGit(t, s, filepath.Join(dir, "github", "git"))
	for _, repo := range recordedRepos {
		stem := strings.ReplaceAll(repo, "/", "-")
		rel, err := os.ReadFile(filepath.Join(dir, "github", stem+"-releases.json"))
		if err == nil {
			s.SetGitHub(repo, "releases", rel)
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		var pages [][]byte
		for p := 1; ; p++ {
			b, err := os.ReadFile(filepath.Join(dir, "github", fmt.Sprintf("%s-tags-%d.json", stem, p)))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, b)
		}
		s.SetGitHub(repo, "tags", pages...)
	}
	html, err := os.ReadFile(filepath.Join(dir, "nginx.org", "download.html"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetNginxOrg(html)
}

// LockBytes returns the lock file's current content.
func (s *DefaultLockScenario) LockBytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ServeRelease serves a stand-in of component name's release v, signed by the component's
// test key after the locked release, and returns its SHA-256. Listing it on GitHub is the
// caller's (Upstream.SetGitHub).
func (s *DefaultLockScenario) ServeRelease(t testing.TB, name, v string) string {
	t.Helper()
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	return s.standIn(t, l.MustComponent(name), v, NewSignedAt)
}

// OfferNginx1306 makes the upstream offer nginx 1.30.6 (a stand-in signed by the scenario's
// nginx test key) as nginx's newest release, the release issue 46 moves the shipped lock to.
func (s *DefaultLockScenario) OfferNginx1306(t testing.TB) {
	t.Helper()
	s.ServeRelease(t, lock.Nginx, "1.30.6")
	s.Upstream.SetGitHub("nginx/nginx", "releases", ReleasesJSON("nginx/nginx", "release-1.30.6", "release-1.26.2"))
	s.Upstream.SetGitHub("nginx/nginx", "tags", TagsJSON("nginx/nginx", "release-1.30.6", "release-1.26.2"))
}

// serveRecordedGit serves each dir/<owner>/<repo>/<path>.json as the GitHub API's
// /repos/<owner>/<repo>/git/<path>.
func serveRecordedGit(t testing.TB, s *Server, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		rel, err := filepath.Rel(dir, strings.TrimSuffix(p, ".json"))
		if err != nil {
			return err
		}
		parts := strings.SplitN(filepath.ToSlash(rel), "/", 3)
		if len(parts) != 3 {
			return fmt.Errorf("%s: want <owner>/<repo>/<path>.json", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.SetGitHub(parts[0]+"/"+parts[1], "git/"+parts[2], b)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
