//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestAWSLCVariantEndToEnd is the AWS-LC variant as a person types it, through the
// command's flag parsing: `ci build --engine host --tls aws-lc --zlib zlib-ng --lock
// <variant test lock> --push` compiles nginx 1.30.4, AWS-LC and zlib-ng from their git trees
// (verified by tree through the loopback mirror), smoke-tests the pushed digest in runc with
// no check skipped (AWS-LC's version in nginx -V, TLS 1.2/1.3, resumption, HTTP/2, HTTP/3),
// moves the variant's suffixed tags, writes an SBOM naming AWS-LC by its git commit; then
// `ci smoke --image DIGEST` passes under runc, and a second build gives the same digest.
func TestAWSLCVariantEndToEnd(t *testing.T) {
	mirrorURL, reg, base := variantE2E(t)
	lockFile := testenv.AWSLCTestLockPath()
	l, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Host + "/nginx-forge/variant"
	rev := "0123456789abcdef0123456789abcdef01234567"
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	build := func(output string) (name.Digest, string) {
		t.Helper()
		args := []string{"build", "--engine", "host", "--tls", "aws-lc", "--zlib", "zlib-ng", "--lock", lockFile,
			"--mirror", mirrorURL, "--cache", testenv.BuildCacheDir(), "--runtime-image", base.String(),
			"--push", "--image", repo, "--revision", rev, "--output", output, "-v"}
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, &stdout, &stderr); code != 0 {
			t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		d, err := name.NewDigest(strings.TrimSpace(stdout.String()))
		if err != nil {
			t.Fatalf("stdout %q is not REPO@sha256:...: %v", stdout.String(), err)
		}
		return d, stderr.String()
	}
	d, log := build(filepath.Join(dir, "variant.tar"))
	logAtEnd(t, "variant build", log)
	if m := regexp.MustCompile(`smoke \(linux/amd64\): (\d+) passed, 0 failed, 0 skipped`).FindStringSubmatch(log); m == nil {
		t.Errorf("the variant's smoke run did not pass every check with none skipped:\n%s", smokeNotPassed(log))
	}
	for _, want := range []string{"AWS-LC 5.5.0", "aws_lc 5.5.0: pinned by git commit 991e67ff4cf0"} {
		if !strings.Contains(log, want) {
			t.Errorf("build log lacks %q", want)
		}
	}
	for _, tag := range image.Tags(l, image.TagEvent{Revision: rev}) {
		if !strings.Contains(tag, "aws-lc") {
			t.Errorf("variant tag %q has no variant suffix", tag)
		}
		desc, err := remote.Head(d.Context().Tag(tag))
		if err != nil || desc.Digest.String() != d.DigestStr() {
			t.Errorf("tag %s: %v %v, want %s", tag, desc, err, d.DigestStr())
		}
	}
	checkVariantSBOM(t, filepath.Join(dir, "variant.tar.spdx.json"))

	var sout, serr bytes.Buffer
	if code := run(ctx, []string{"smoke", "--image", d.String()}, &sout, &serr); code != 0 {
		t.Errorf("ci smoke --image %s: exit %d; not passed:\n%s", d, code, smokeNotPassed(sout.String()+serr.String()))
		logAtEnd(t, "ci smoke --image "+d.String(), sout.String()+serr.String())
	}
	again, _ := build(filepath.Join(dir, "again.tar"))
	if again.DigestStr() != d.DigestStr() {
		t.Errorf("second build of the same lock and flags: %s, first %s", again.DigestStr(), d.DigestStr())
	}
}

// checkVariantSBOM: AWS-LC, zlib-ng and nginx named by their git commits (SPDX VCS
// locations, pkg:github purls), AWS-LC with its CPE, every licence asserted.
func checkVariantSBOM(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []struct {
			Name, VersionInfo, DownloadLocation, LicenseDeclared string
			ExternalRefs                                         []struct{ ReferenceLocator string }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"aws_lc":  {"git+https://github.com/aws/aws-lc.git@991e67ff4cf04df4dd89e407f8b920c6936cb56a", "pkg:github/aws/aws-lc@v5.5.0", "cpe:2.3:a:aws:aws-lc:5.5.0"},
		"zlib_ng": {"git+https://github.com/zlib-ng/zlib-ng.git@c939498c7f2a1d645833a98251365e2c814fd736", "pkg:github/zlib-ng/zlib-ng@2.2.2"},
		"nginx":   {"git+https://github.com/nginx/nginx.git@017cf98dcce217946572a896f0992370475e189f", "pkg:github/nginx/nginx@release-1.30.4"},
	}
	for _, p := range doc.Packages {
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		delete(want, p.Name)
		got := p.DownloadLocation
		for _, r := range p.ExternalRefs {
			got += " " + r.ReferenceLocator
		}
		for _, s := range w {
			if !strings.Contains(got, s) {
				t.Errorf("SBOM package %s lacks %s (has %s)", p.Name, s, got)
			}
		}
		if p.LicenseDeclared == "" || p.LicenseDeclared == "NOASSERTION" {
			t.Errorf("SBOM package %s has no licence", p.Name)
		}
	}
	for n := range want {
		t.Errorf("SBOM has no package %s", n)
	}
}

// variantE2E is where the AWS-LC variant's end-to-end tests start: the shared upstream
// mirror (AWS-LC's git archive in it) served on loopback, runc for the smoke tests, and a
// registry holding the stand-in base. Everything is stopped when the test ends.
func variantE2E(t *testing.T) (mirrorURL string, reg *registrytest.Registry, base name.Digest) {
	t.Helper()
	testenv.SharedUpstream(t)
	mirror := testenv.MirrorDir(t)
	if _, err := os.Stat(filepath.Join(mirror, "aws-lc-5.5.0-git.tar.gz")); err != nil {
		testenv.Missing(t, "aws-lc-5.5.0-git.tar.gz in the mirror", "run .ci/fetch-sources again (it copies ../shared/upstream's archives)")
	}
	needHostSmoke(t)
	reg = registrytest.Start(t)
	base = basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	t.Cleanup(srv.Close)
	return srv.URL, reg, base
}
