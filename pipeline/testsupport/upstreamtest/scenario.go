package upstreamtest

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// NewOpenSSL is the release a Scenario offers beyond the test lock's OpenSSL 3.5.7.
const NewOpenSSL = "3.5.8"

// LockedOpenSSL is the test lock's OpenSSL, for which a Scenario serves a stand-in tarball
// and signature (check-updates verifies the locked release to learn its signature's date).
const LockedOpenSSL = "3.5.7"

// Times of a Scenario, fixed once per test binary: keys are made first (NewKey), the locked
// release is signed after them and the new one after that, as upstream releases are. They are
// package-level so that a test which runs late in a long test binary still signs after its
// key's creation.
var (
	KeysCreatedAt  = time.Now().Add(-time.Hour).Truncate(time.Second)
	LockedSignedAt = time.Now().Add(-40 * time.Minute).Truncate(time.Second)
	NewSignedAt    = time.Now().Add(-10 * time.Minute).Truncate(time.Second)
)

// Scenario is a complete loopback upstream for check-updates: the test lock
// (pipeline/lock/testdata/trixie.lock.json, Debian trixie's releases) copied to a temporary file with OpenSSL's signer
// pinned to a test key and its checksum to a stand-in of the locked release; a GitHub API
// that lists the locked versions of nginx, PCRE2, zlib and the lock's optional components
// (brotli, ngx_brotli, zstd) and a newer OpenSSL (next to pre-releases and odd tags that must
// be ignored); a mirror with the locked and the new
// OpenSSL tarballs, their signatures by the pinned key (the new one made later) and the key
// itself; and a registry holding the builder and runtime base images under the lock's tags,
// each an index for linux/amd64 and linux/arm64.
//
// The pinned key stands for a vendored one: pass Vendored as upstream.Updater.Vendored (the
// keys really vendored in pipeline/lock/keys are upstream's, and no test can sign with them).
type Scenario struct {
	Upstream *Server
	// Registry is the host:port of the loopback registry.
	Registry string
	// LockFile is the lock copy to check and rewrite.
	LockFile string
	// Pinned is the key the lock pins for OpenSSL; Tarball is the new OpenSSL tarball it signed,
	// Locked the locked one's stand-in.
	Pinned          *Key
	Tarball, Locked []byte
	// BuilderDigest and RuntimeDigest are what the base image tags point at (index digests).
	BuilderDigest, RuntimeDigest string
	// Vendored is the fingerprint list to trust as vendored: the pinned key's.
	Vendored []string
}

// TarballName and SignatureName are the mirror names of the offered release.
const (
	TarballName   = "openssl-" + NewOpenSSL + ".tar.gz"
	SignatureName = TarballName + ".asc"
)

// NewScenario builds the scenario for the test's lifetime.
func NewScenario(t testing.TB) *Scenario {
	t.Helper()
	s := &Scenario{Upstream: New(t), Pinned: NewKey(t, "OpenSSL Test Signer")}
	s.Vendored = []string{s.Pinned.Fingerprint}
	u := s.Upstream

	l, err := lock.Load(testenv.TrixieLockPath())
	if err != nil {
		t.Fatal(err)
	}
	locked := Tarball(t, "openssl-"+LockedOpenSSL, map[string]string{
		"VERSION.dat": "MAJOR=3\nMINOR=5\nPATCH=7\n",
		"README.md":   "OpenSSL " + LockedOpenSSL + " (a test stand-in)\n",
	})
	s.Locked = locked
	u.SetFile("openssl-"+LockedOpenSSL+".tar.gz", locked)
	u.SetFile("openssl-"+LockedOpenSSL+".tar.gz.asc", s.Pinned.SignAt(t, locked, LockedSignedAt))
	ossl := l.MustComponent(lock.OpenSSL)
	if ossl.Version != LockedOpenSSL {
		t.Fatalf("the test lock has OpenSSL %s; the scenario stands in for %s", ossl.Version, LockedOpenSSL)
	}
	ossl.SHA256 = SHA256(locked)
	ossl.Signature.Fingerprints = []string{s.Pinned.Fingerprint}
	l.SetComponent(ossl)
	s.LockFile = filepath.Join(t.TempDir(), "stack.lock.json")
	if err := l.Write(s.LockFile); err != nil {
		t.Fatal(err)
	}

	u.SetGitHub("nginx/nginx", "releases", ReleasesJSON("nginx/nginx", "release-1.29.3", "release-1.28.1"))
	u.SetGitHub("nginx/nginx", "tags",
		TagsJSON("nginx/nginx", "release-1.29.3", "release-1.28.1", "release-1.28.0"),
		TagsJSON("nginx/nginx", "release-1.26.3", "release-1.26.2", "before-1.0-branch"))
	u.SetGitHub("openssl/openssl", "releases", ReleasesJSON("openssl/openssl",
		"openssl-3.6.1", "openssl-3.6.0", "openssl-3.5.9!draft", "openssl-"+NewOpenSSL, "openssl-3.5.7", "openssl-3.5.8-rc1!pre"))
	u.SetGitHub("openssl/openssl", "tags", TagsJSON("openssl/openssl",
		"openssl-3.6.1", "openssl-3.6.0", "openssl-3.6.0-beta1", "openssl-"+NewOpenSSL, "openssl-3.5.7", "OpenSSL_1_1_1w"))
	u.SetGitHub("PCRE2Project/pcre2", "releases", ReleasesJSON("PCRE2Project/pcre2", "pcre2-10.47-RC1!pre", "pcre2-10.46"))
	u.SetGitHub("PCRE2Project/pcre2", "tags", TagsJSON("PCRE2Project/pcre2", "pcre2-10.47-RC1", "pcre2-10.46", "pcre2-10.45"))
	u.SetGitHub("madler/zlib", "releases", ReleasesJSON("madler/zlib", "v1.3.1", "v1.3"))
	u.SetGitHub("madler/zlib", "tags", TagsJSON("madler/zlib", "v1.3.1.2-audit", "v1.3.1", "v1.3"))
	// The test lock's optional components are current: brotli 1.1.0, ngx_brotli 1.0.0rc,
	// zstd 1.5.7 (ngx_brotli's releases are its tags; its release objects are not read).
	u.SetGitHub("google/brotli", "releases", ReleasesJSON("google/brotli", "v1.1.0", "v1.0.9"))
	u.SetGitHub("google/brotli", "tags", TagsJSON("google/brotli", "v1.1.0", "v1.0.9"))
	u.SetGitHub("google/ngx_brotli", "tags", TagsJSON("google/ngx_brotli", "v1.0.0rc"))
	u.SetGitHub("facebook/zstd", "releases", ReleasesJSON("facebook/zstd", "v1.5.7", "v1.5.6"))
	u.SetGitHub("facebook/zstd", "tags", TagsJSON("facebook/zstd", "v1.5.7", "v1.5.6"))

	s.Tarball = Tarball(t, "openssl-"+NewOpenSSL, map[string]string{
		"VERSION.dat": "MAJOR=3\nMINOR=5\nPATCH=8\n",
		"README.md":   "OpenSSL " + NewOpenSSL + " (a test stand-in)\n",
	})
	u.SetFile(TarballName, s.Tarball)
	u.SetFile(SignatureName, s.Pinned.SignAt(t, s.Tarball, NewSignedAt))
	u.SetFile(s.Pinned.Fingerprint+".asc", s.Pinned.Armored)

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	s.Registry = strings.TrimPrefix(reg.URL, "http://")
	s.BuilderDigest = s.PushBase(t, l.Images.Builder.Ref)
	s.RuntimeDigest = s.PushBase(t, l.Images.Runtime.Ref)
	return s
}

// PushBase pushes a fresh random linux/amd64 + linux/arm64 index to the loopback registry
// under ref's repository and tag (as a base image update would) and returns its digest.
func (s *Scenario) PushBase(t testing.TB, ref string) string {
	t.Helper()
	return PushIndex(t, s.Registry, ref, "linux/amd64", "linux/arm64/v8")
}

// localTag is ref's repository and tag on the registry host.
func localTag(t testing.TB, host, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	local, err := name.NewTag(host+"/"+tag.RepositoryStr()+":"+tag.TagStr(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return local
}

// PushIndex pushes an index of fresh random images, one per platform ("os/arch" or
// "os/arch/variant"), to the registry at host under ref's repository and tag, and returns the
// index digest. The blobs are pushed first, so a registry that validates manifests (Debian's
// docker-registry) accepts it.
func PushIndex(t testing.TB, host, ref string, platforms ...string) string {
	t.Helper()
	local := localTag(t, host, ref)
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		parts := strings.Split(p, "/")
		if len(parts) < 2 {
			t.Fatalf("platform %q is not os/arch[/variant]", p)
		}
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		plat := &v1.Platform{OS: parts[0], Architecture: parts[1]}
		if len(parts) > 2 {
			plat.Variant = parts[2]
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	if err := remote.WriteIndex(local, idx); err != nil {
		t.Fatalf("pushing %s: %v", local, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// PushImage pushes one random single-platform image (no index) under ref's tag on host and
// returns its manifest digest.
func PushImage(t testing.TB, host, ref string) string {
	t.Helper()
	local := localTag(t, host, ref)
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(local, img); err != nil {
		t.Fatalf("pushing %s: %v", local, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// Tamper serves a tarball that differs from the signed one by one byte.
func (s *Scenario) Tamper() {
	b := append([]byte(nil), s.Tarball...)
	b[len(b)/2] ^= 0x01
	s.Upstream.SetFile(TarballName, b)
}

// SignWith replaces the signature by one from k (and serves k's public key, so the failure
// is about the pin, not a missing key).
func (s *Scenario) SignWith(t testing.TB, k *Key) {
	t.Helper()
	s.Upstream.SetFile(SignatureName, k.SignAt(t, s.Tarball, NewSignedAt))
	s.Upstream.SetFile(k.Fingerprint+".asc", k.Armored)
}

// LockBytes returns the lock file's current content.
func (s *Scenario) LockBytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
