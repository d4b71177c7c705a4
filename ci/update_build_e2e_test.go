//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
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

// realRelease is a release the update replay offers whose real tarball .ci/fetch-sources
// brings from Debian into the mirror directory.
type realRelease struct {
	name, version string
	// mirrorFile is the tarball's name in the mirror directory; signature, when not "", is
	// upstream's real signature beside it (its signer is vendored in pipeline/lock/keys).
	// Without one the test signs the tarball with the component's test key.
	mirrorFile, signature string
	// releases are the GitHub release names upstream lists, newest first.
	releases []string
	// topDir, when not "", re-roots the tarball under topDir/, as upstream's tarball is
	// (check-updates refuses a tarball whose top directory is not <name>-<version>/).
	topDir string
}

// realReleases are newer than the seed lock's releases on each of its tracks (nginx
// stable, OpenSSL LTS, PCRE2 and zlib latest). nginx's and OpenSSL's come with upstream's own
// signatures. zlib's is Debian's repack of 1.3.2 (upstream's tarball is not reachable
// here), re-rooted under zlib-1.3.2/ and served under upstream's name.
var realReleases = []realRelease{
	{lock.Nginx, "1.26.3", "nginx-1.26.3.tar.gz", "nginx-1.26.3.tar.gz.asc",
		[]string{"release-1.27.4", "release-1.26.3", "release-1.26.2"}, ""},
	{lock.OpenSSL, "3.5.7", "openssl-3.5.7.tar.gz", "openssl-3.5.7.tar.gz.asc",
		[]string{"openssl-3.6.3", "openssl-3.5.7", "openssl-3.5.6", "openssl-3.3.1"}, ""},
	{lock.PCRE2, "10.48", "pcre2-10.48.tar.gz", "",
		[]string{"pcre2-10.48", "pcre2-10.46", "pcre2-10.45", "pcre2-10.44"}, ""},
	{lock.Zlib, "1.3.2", "zlib_1.3.dfsg+really1.3.2.orig.tar.gz", "",
		[]string{"v1.3.2", "v1.3.1"}, "zlib-1.3.2"},
}

// tarball is the release's tarball as the replay serves it.
func (rr realRelease) tarball(t *testing.T, mirror string) []byte {
	t.Helper()
	tb, err := os.ReadFile(filepath.Join(mirror, rr.mirrorFile))
	if err != nil {
		t.Fatalf("the mirror lacks %s %s (.ci/fetch-sources gets it): %v", rr.name, rr.version, err)
	}
	if rr.topDir == "" {
		return tb
	}
	zr, err := gzip.NewReader(bytes.NewReader(tb))
	if err != nil {
		t.Fatalf("%s: %v", rr.mirrorFile, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", rr.mirrorFile, err)
		}
		_, rest, _ := strings.Cut(h.Name, "/")
		h.Name = rr.topDir + "/" + rest
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var githubRepos = map[string]string{lock.Nginx: "nginx/nginx", lock.OpenSSL: "openssl/openssl",
	lock.PCRE2: "PCRE2Project/pcre2", lock.Zlib: "madler/zlib"}

// TestUpdateThenBuildWithoutAKeyServer is the unattended loop's first day, compiled: the
// seed lock (pipeline/lock/seed.lock.json, the shipped lock until it moved to nginx 1.30: its
// versions, tracks, URLs and signers) meets
// an upstream on loopback that offers real newer releases of all four components and new
// base image digests. One `check-updates --write` moves every component, pins both images
// and vendors the two signer keys that only a key server had (PCRE2's and zlib's, pinned but
// not vendored, as in the shipped lock). Then `ci build --engine host` of the lock it wrote
// compiles the stack from those real tarballs and smoke-tests the image with every key server
// unreachable.
//
// What stands in: the locked releases (nginx 1.26.2, OpenSSL 3.3.1, PCRE2 10.44, zlib 1.3.1)
// are small tarballs signed by test keys, because check-updates verifies the locked release
// to learn its signature date and those tarballs are not here; PCRE2 10.48 and zlib 1.3.2 are
// signed by test keys (upstream's signatures are not here), which the lock copy pins beside
// the real signers; the base images are random indexes on a loopback registry, and the build
// runs on the stand-in distroless base.
func TestUpdateThenBuildWithoutAKeyServer(t *testing.T) {
	notInActions(t)
	needHostSmoke(t)
	mirror := testenv.MirrorDir(t)
	u := upstreamtest.New(t)
	ks := upstreamtest.NewKeyserver(t)
	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "seed.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The lock's SOURCE_DATE_EPOCH is in every stage's cache key. The updated lock's OpenSSL
	// 3.5.7 and PCRE2 10.48 are the test lock's bytes, built by the same stage scripts: with
	// the test lock's epoch they are the test lock's stages, which the shared build cache
	// holds (built once a run, by whichever test needs them first), so the build below
	// compiles only what the update changed from the test lock (zlib 1.3.2, nginx 1.26.3).
	// Nothing here depends on the epoch's value.
	twin, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.SourceDateEpoch = twin.SourceDateEpoch
	lockFile := filepath.Join(t.TempDir(), "stack.lock.json")
	keysDir := lock.KeysDirBeside(lockFile)
	if err := os.MkdirAll(keysDir, 0o755); err != nil {
		t.Fatal(err)
	}
	unvendored := map[string]*upstreamtest.Key{}
	for _, rr := range realReleases {
		c := l.MustComponent(rr.name)
		tb := rr.tarball(t, mirror)
		file := strings.ReplaceAll(c.FileName(), c.Version, rr.version)
		sigFile := strings.ReplaceAll(c.SignatureFileName(), c.Version, rr.version)
		u.SetFile(file, tb)
		var lockedKey *upstreamtest.Key
		var lockedAt time.Time
		if rr.signature != "" {
			// Upstream's signature, by a signer the shipped lock pins and pipeline/lock/keys
			// vendors. The locked stand-in is signed a month before it, by a test key that a
			// reviewed change vendored beside the lock.
			sig, err := os.ReadFile(filepath.Join(mirror, rr.signature))
			if err != nil {
				t.Fatalf("the mirror lacks %s (.ci/fetch-sources gets it): %v", rr.signature, err)
			}
			u.SetFile(sigFile, sig)
			signed := signatureTime(t, filepath.Join(mirror, rr.signature))
			lockedKey = upstreamtest.NewKeyAt(t, rr.name+" Locked Test Signer", signed.Add(-60*24*time.Hour))
			lockedAt = signed.Add(-30 * 24 * time.Hour)
			if err := os.WriteFile(filepath.Join(keysDir, lockedKey.Fingerprint+".asc"), lockedKey.Armored, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			// Signed by a test key the lock pins but nobody vendored: only the key server has it.
			lockedKey = upstreamtest.NewKey(t, rr.name+" Test Signer")
			lockedAt = upstreamtest.LockedSignedAt
			unvendored[rr.name] = lockedKey
			ks.Serve(lockedKey.Fingerprint, lockedKey.Armored)
			if strings.HasSuffix(sigFile, ".sig") {
				u.SetFile(sigFile, lockedKey.SignBinaryAt(t, tb, upstreamtest.NewSignedAt))
			} else {
				u.SetFile(sigFile, lockedKey.SignAt(t, tb, upstreamtest.NewSignedAt))
			}
		}
		standIn := upstreamtest.Tarball(t, rr.name+"-"+c.Version, map[string]string{"README": rr.name + " " + c.Version + " (a test stand-in)\n"})
		u.SetFile(c.FileName(), standIn)
		if strings.HasSuffix(c.SignatureFileName(), ".sig") {
			u.SetFile(c.SignatureFileName(), lockedKey.SignBinaryAt(t, standIn, lockedAt))
		} else {
			u.SetFile(c.SignatureFileName(), lockedKey.SignAt(t, standIn, lockedAt))
		}
		c.SHA256 = upstreamtest.SHA256(standIn)
		c.Signature.Fingerprints = append(c.Signature.Fingerprints, lockedKey.Fingerprint)
		l.SetComponent(c)
		repo := githubRepos[rr.name]
		u.SetGitHub(repo, "releases", upstreamtest.ReleasesJSON(repo, rr.releases...))
		u.SetGitHub(repo, "tags", upstreamtest.TagsJSON(repo, rr.releases...))
	}
	if err := l.Write(lockFile); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	regHost := strings.TrimPrefix(reg.URL, "http://")
	builderDigest := upstreamtest.PushIndex(t, regHost, l.Images.Builder.Ref, "linux/amd64", "linux/arm64/v8")
	runtimeDigest := upstreamtest.PushIndex(t, regHost, l.Images.Runtime.Ref, "linux/amd64", "linux/arm64/v8")

	// The scheduled run: the keys pipeline/lock/keys vendors, plus the keys directory beside
	// the lock copy, are all it trusts without asking the key server.
	body := filepath.Join(t.TempDir(), "body.md")
	code, out, errs := runCheckUpdatesOn(t, u, regHost, lockFile, nil, "--write", "--pr-body", body, "--keyserver", ks.URL)
	if code != 0 {
		t.Fatalf("check-updates --write: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Logf("check-updates --write:\n%s", out)
	updated, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range realReleases {
		tb := rr.tarball(t, mirror)
		if c := updated.MustComponent(rr.name); c.Version != rr.version || c.SHA256 != upstreamtest.SHA256(tb) {
			t.Errorf("%s is %s (sha256 %s), want %s (sha256 %s)", rr.name, c.Version, c.SHA256, rr.version, upstreamtest.SHA256(tb))
		}
	}
	if updated.Images.Builder.Digest != builderDigest || updated.Images.Runtime.Digest != runtimeDigest {
		t.Errorf("images = %+v; want both pinned to %s and %s", updated.Images, builderDigest, runtimeDigest)
	}
	pr, err := os.ReadFile(body)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range unvendored {
		b, err := os.ReadFile(filepath.Join(keysDir, k.Fingerprint+".asc"))
		if err != nil {
			t.Errorf("%s's signer key was not vendored: %v", name, err)
		} else if fprs, err := readArmoredKeys(b); err != nil || len(fprs) != 1 || fprs[0] != k.Fingerprint {
			t.Errorf("%s's key file holds %v (%v), want exactly %s", name, fprs, err, k.Fingerprint)
		}
		if !strings.Contains(string(pr), "| `pipeline/lock/keys/"+k.Fingerprint+".asc` | `"+k.Fingerprint+"`") {
			t.Errorf("the pull request body does not name %s's new key %s:\n%s", name, k.Fingerprint, pr)
		}
	}

	// The build of the lock the update wrote: sources from the loopback mirror, the key server
	// a port that refuses every connection, the keys directory beside the lock as reviewed.
	asked := len(ks.Requests())
	base := basetest.PushFor(t, regHost, "distroless/base-nossl-debian13", basetest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	output := filepath.Join(t.TempDir(), "nginx.tar")
	err = runBuild(ctx, buildFlags{engine: "host", lockFile: lockFile, mirror: u.Mirror(), keyserver: "http://127.0.0.1:9",
		platform: mustPlatforms("linux/amd64"), cache: testenv.BuildCacheDir(), runtimeImage: base.String(), output: output,
		revision: "0123456789abcdef0123456789abcdef01234567", verbose: true}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("host build of the updated lock: %v\n%s", err, stderr.String())
	}
	t.Logf("build of the updated lock:\n%s", stderr.String())
	if fi, err := os.Stat(output); err != nil || fi.Size() == 0 {
		t.Errorf("the build wrote no image at %s: %v", output, err)
	}
	if n := len(ks.Requests()); n != asked {
		t.Errorf("the build asked the key server %d times", n-asked)
	}
	// What was compiled: nginx -V in the image (the smoke table), and the SBOM beside it.
	if want := "nginx 1.26.3, OpenSSL 3.5.7, PCRE2 10.48"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the smoke table does not report %q", want)
	}
	b, err := os.ReadFile(output + ".spdx.json")
	if err != nil {
		t.Fatal(err)
	}
	var sbom struct {
		Packages []struct{ Name, VersionInfo string }
	}
	if err := json.Unmarshal(b, &sbom); err != nil {
		t.Fatalf("%s.spdx.json: %v", output, err)
	}
	got := map[string]string{}
	for _, p := range sbom.Packages {
		got[p.Name] = p.VersionInfo
	}
	for _, rr := range realReleases {
		if got[rr.name] != rr.version {
			t.Errorf("the SBOM has %s %q, want %s", rr.name, got[rr.name], rr.version)
		}
	}
	if !strings.Contains(stderr.String(), "smoke (linux/amd64): done in") {
		t.Errorf("the build did not smoke-test the image:\n%s", stderr.String())
	}
}
