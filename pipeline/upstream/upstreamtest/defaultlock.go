package upstreamtest

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testenv"
)

// The newest releases on each default-lock track in the recorded GitHub responses
// (pipeline/upstream/testdata/github): nginx's newest stable (even minor) release, OpenSSL's
// newest release of an LTS branch (3.5.9 is marked pre-release there and 3.5.10 draft, so
// neither counts), and PCRE2's latest. zlib's latest is the locked 1.3.1.
var RecordedTargets = map[string]string{
	lock.Nginx:   "1.28.0",
	lock.OpenSSL: "3.5.4",
	lock.PCRE2:   "10.46",
}

// DefaultLockScenario is the shipped lock (pipeline/lock/stack.lock.json) against the
// recorded upstream: GitHub and nginx.org answer with the recorded responses, and the mirror
// serves, for every locked release and every RecordedTargets release, a stand-in tarball
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

// NewDefaultLockScenario builds it for the test's lifetime.
func NewDefaultLockScenario(t testing.TB) *DefaultLockScenario {
	t.Helper()
	s := &DefaultLockScenario{Upstream: New(t), Keys: map[string]*Key{}, Tarballs: map[string][]byte{}}
	ServeRecorded(t, s.Upstream, filepath.Join(testenv.RepoRoot(), "pipeline", "upstream", "testdata"))

	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), lock.DefaultPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range lock.ComponentOrder {
		c := l.MustComponent(name)
		k := NewKey(t, name+" Test Signer")
		s.Keys[name] = k
		s.Vendored = append(s.Vendored, k.Fingerprint)
		sum := s.standIn(t, c, c.Version, LockedSignedAt)
		c.SHA256 = sum
		if c.Signature != nil {
			c.Signature.Fingerprints = []string{k.Fingerprint}
		}
		l.SetComponent(c)
		if v, ok := RecordedTargets[name]; ok {
			s.standIn(t, c, v, NewSignedAt)
		}
	}
	s.LockFile = filepath.Join(t.TempDir(), "stack.lock.json")
	if err := l.Write(s.LockFile); err != nil {
		t.Fatal(err)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	s.Registry = strings.TrimPrefix(reg.URL, "http://")
	s.BuilderDigest = PushIndex(t, s.Registry, l.Images.Builder.Ref, "linux/amd64", "linux/arm64/v8")
	s.RuntimeDigest = PushIndex(t, s.Registry, l.Images.Runtime.Ref, "linux/amd64", "linux/arm64/v8")
	return s
}

// standIn serves component c's release v (file names from c's URLs with the version
// replaced) signed by c's test key at the given time, and returns the tarball's SHA-256.
func (s *DefaultLockScenario) standIn(t testing.TB, c lock.Component, v string, at time.Time) string {
	t.Helper()
	file := strings.ReplaceAll(c.FileName(), c.Version, v)
	tb := Tarball(t, c.Name+"-"+v, map[string]string{
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

// ServeRecorded makes s answer with the GitHub API responses recorded under
// dir/github (<owner>-<repo>-releases.json and <owner>-<repo>-tags-<page>.json, pages linked
// like GitHub's) and nginx.org's download page recorded as dir/nginx.org/download.html.
func ServeRecorded(t testing.TB, s *Server, dir string) {
	t.Helper()
	for _, repo := range []string{"nginx/nginx", "openssl/openssl", "PCRE2Project/pcre2", "madler/zlib"} {
		stem := strings.ReplaceAll(repo, "/", "-")
		rel, err := os.ReadFile(filepath.Join(dir, "github", stem+"-releases.json"))
		if err != nil {
			t.Fatal(err)
		}
		s.SetGitHub(repo, "releases", rel)
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
