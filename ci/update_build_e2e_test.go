package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// signatureTime is when the armored detached signature at path was made.
func signatureTime(t *testing.T, path string) time.Time {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block, err := armor.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		t.Fatalf("%s: first packet is %T, not a signature", path, p)
	}
	return sig.CreationTime
}

// TestUpdateThenBuildWithoutAKeyServer is the unattended loop's whole way for one component,
// with upstream's real release: the test lock with its OpenSSL one release behind (a stand-in
// 3.5.6, signed by a pinned test key before upstream signed 3.5.7), an upstream on loopback
// that offers the real openssl-3.5.7.tar.gz with OpenSSL's real signature, `check-updates
// --write`, then a host build of the lock it wrote, with every key server unreachable: the
// new release verifies against the signer key vendored in pipeline/lock/keys, and the stack
// compiles from it.
func TestUpdateThenBuildWithoutAKeyServer(t *testing.T) {
	notInActions(t)
	mirror := testenv.MirrorDir(t)
	const oldV, newV = "3.5.6", "3.5.7"
	realTarball := filepath.Join(mirror, "openssl-"+newV+".tar.gz")
	realSig, err := os.ReadFile(realTarball + ".asc")
	if err != nil {
		t.Fatalf("the mirror lacks OpenSSL %s's signature (.ci/fetch-sources gets it): %v", newV, err)
	}
	realBytes, err := os.ReadFile(realTarball)
	if err != nil {
		t.Fatal(err)
	}
	signed := signatureTime(t, realTarball+".asc")

	// The lock one release behind: its OpenSSL a stand-in of 3.5.6, signed a month before
	// upstream signed 3.5.7 by a test key the lock pins beside OpenSSL's real signer.
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	ossl := l.MustComponent(lock.OpenSSL)
	if ossl.Version != newV {
		t.Fatalf("the test lock has OpenSSL %s, this test replays the update to %s", ossl.Version, newV)
	}
	pinnedReal := ossl.Signature.Fingerprints
	old := upstreamtest.NewKeyAt(t, "OpenSSL Test Signer", signed.Add(-60*24*time.Hour))
	standIn := upstreamtest.Tarball(t, "openssl-"+oldV, map[string]string{"VERSION.dat": "MAJOR=3\nMINOR=5\nPATCH=6\n"})
	ossl.Version = oldV
	ossl.URL = strings.ReplaceAll(ossl.URL, newV, oldV)
	ossl.Signature.URL = strings.ReplaceAll(ossl.Signature.URL, newV, oldV)
	ossl.SHA256 = upstreamtest.SHA256(standIn)
	ossl.Signature.Fingerprints = append(append([]string(nil), pinnedReal...), old.Fingerprint)
	l.SetComponent(ossl)
	lockFile := filepath.Join(t.TempDir(), "stack.lock.json")
	if err := l.Write(lockFile); err != nil {
		t.Fatal(err)
	}

	// The test key is vendored beside the lock, as a reviewed change would have put it.
	keysDir := lock.KeysDirBeside(lockFile)
	if err := os.MkdirAll(keysDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keysDir, old.Fingerprint+".asc"), old.Armored, 0o644); err != nil {
		t.Fatal(err)
	}

	u := upstreamtest.New(t)
	u.SetFile("openssl-"+oldV+".tar.gz", standIn)
	u.SetFile("openssl-"+oldV+".tar.gz.asc", old.SignAt(t, standIn, signed.Add(-30*24*time.Hour)))
	u.SetFile("openssl-"+newV+".tar.gz", realBytes)
	u.SetFile("openssl-"+newV+".tar.gz.asc", realSig)
	u.SetGitHub("openssl/openssl", "releases", upstreamtest.ReleasesJSON("openssl/openssl", "openssl-3.6.0", "openssl-"+newV, "openssl-"+oldV))
	u.SetGitHub("openssl/openssl", "tags", upstreamtest.TagsJSON("openssl/openssl", "openssl-3.6.0", "openssl-"+newV, "openssl-"+oldV))
	u.SetGitHub("nginx/nginx", "releases", upstreamtest.ReleasesJSON("nginx/nginx", "release-1.26.3"))
	u.SetGitHub("nginx/nginx", "tags", upstreamtest.TagsJSON("nginx/nginx", "release-1.26.3", "release-1.26.2"))
	u.SetGitHub("PCRE2Project/pcre2", "releases", upstreamtest.ReleasesJSON("PCRE2Project/pcre2", "pcre2-10.46"))
	u.SetGitHub("PCRE2Project/pcre2", "tags", upstreamtest.TagsJSON("PCRE2Project/pcre2", "pcre2-10.46"))
	u.SetGitHub("madler/zlib", "releases", upstreamtest.ReleasesJSON("madler/zlib", "v1.3.1"))
	u.SetGitHub("madler/zlib", "tags", upstreamtest.TagsJSON("madler/zlib", "v1.3.1"))
	u.SetGitHub("google/brotli", "releases", upstreamtest.ReleasesJSON("google/brotli", "v1.1.0"))
	u.SetGitHub("google/brotli", "tags", upstreamtest.TagsJSON("google/brotli", "v1.1.0"))
	u.SetGitHub("google/ngx_brotli", "tags", upstreamtest.TagsJSON("google/ngx_brotli", "v1.0.0rc"))
	u.SetGitHub("facebook/zstd", "releases", upstreamtest.ReleasesJSON("facebook/zstd", "v1.5.7"))
	u.SetGitHub("facebook/zstd", "tags", upstreamtest.TagsJSON("facebook/zstd", "v1.5.7"))

	// Nothing answers on the key servers: every key must already be in the repository.
	deadKeyserver := "http://127.0.0.1:9"
	// The stand-in's test key counts as vendored, next to the really vendored real signer.
	code, out, errs := runCheckUpdatesOn(t, u, "", lockFile, append(append([]string(nil), pinnedReal...), old.Fingerprint),
		"--write", "--skip-images", "--keyserver", deadKeyserver)
	if code != 0 {
		t.Fatalf("check-updates --write: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	updated, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := lock.Load(testLockPath)
	if got, w := updated.MustComponent(lock.OpenSSL), want.MustComponent(lock.OpenSSL); got.Version != newV || got.SHA256 != w.SHA256 || got.URL != w.URL || got.Signature.URL != w.Signature.URL {
		t.Fatalf("the updated lock's OpenSSL is %+v, want upstream's %s (sha256 %s, %s)", got, newV, w.SHA256, w.URL)
	}
	t.Logf("check-updates --write:\n%s", out)

	// The host build of the lock the update wrote: sources from the mirror, no key server.
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()
	tree := filepath.Join(t.TempDir(), "tree")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	err = runBuild(ctx, buildFlags{engine: "host", lockFile: lockFile, mirror: srv.URL, keyserver: deadKeyserver, platform: "linux/amd64",
		cache: testenv.BuildCacheDir(), tree: tree, verbose: true}, io.Discard, &stderr)
	if err != nil {
		t.Fatalf("host build of the updated lock: %v\n%s", err, stderr.String())
	}
	if fi, err := os.Stat(filepath.Join(tree, "usr", "sbin", "nginx")); err != nil || fi.Size() == 0 {
		t.Fatalf("the build wrote no nginx binary: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "openssl "+newV) && !strings.Contains(stderr.String(), "openssl-"+newV) {
		t.Errorf("the build log does not name OpenSSL %s:\n%s", newV, stderr.String())
	}
}
