//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

func needHostSmoke(t *testing.T) {
	t.Helper()
	testenv.Tool(t, "runc", "runc")
	testenv.Tool(t, "umoci", "umoci")
	testenv.Root(t)
}

// TestBuildPushEndToEnd is `ci build --engine host --push --output` against the real
// registry: the stack from the real tarballs (through a loopback mirror), the image on the
// stand-in distroless base, the smoke tests in runc on the pushed digest, the default tags,
// the SBOM, the tarball; run again through the command line with --sign-key, the same digest
// signed and attested (signedPushOnTheCommandLine); and, run again, the same digest with
// nothing pushed and the GitHub Actions outputs set.
func TestBuildPushEndToEnd(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	needHostSmoke(t)
	reg := registrytest.Start(t)
	base := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Host + "/nginx-forge"
	dir := t.TempDir()
	flags := func(output string) buildFlags {
		return buildFlags{engine: "host", lockFile: testLockPath, mirror: srv.URL, platform: mustPlatforms("linux/amd64"),
			cache: testenv.BuildCacheDir(), image: repo, push: true, runtimeImage: base.String(),
			output: output, revision: "0123456789abcdef0123456789abcdef01234567", verbose: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()

	var stdout, stderr bytes.Buffer
	if err := runBuild(ctx, flags(filepath.Join(dir, "nginx.tar")), &stdout, &stderr); err != nil {
		t.Fatalf("build --push: %v\n%s", err, stderr.String())
	}
	t.Logf("first build (the smoke table included):\n%s", stderr.String())
	digestLine := strings.TrimSpace(stdout.String())
	d, err := name.NewDigest(digestLine)
	if err != nil {
		t.Fatalf("stdout %q is not REPO@sha256:...: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "bytes compressed: base ") {
		t.Errorf("the build log does not give the image's size:\n%s", stderr.String())
	}
	if d.Context().String() != repo {
		t.Errorf("pushed to %s, want %s", d.Context(), repo)
	}
	for _, tag := range image.Tags(l, image.TagEvent{Latest: false}) {
		ref, err := name.ParseReference(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref)
		if err != nil {
			t.Errorf("tag %s: %v", tag, err)
			continue
		}
		if desc.Digest.String() != d.DigestStr() {
			t.Errorf("tag %s points at %s, want %s", tag, desc.Digest, d.DigestStr())
		}
	}
	if latest, _ := name.ParseReference(repo + ":latest"); latest == nil {
		t.Fatal("parsing the latest reference")
	} else if _, err := remote.Head(latest); err == nil {
		t.Error("latest was moved without --latest")
	}
	for _, f := range []string{"nginx.tar", "nginx.tar.spdx.json"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("--output did not write %s: %v", f, err)
		}
	}
	checkAnnotations(t, d, base)
	for _, want := range []string{"zlib (linux/amd64): started", "nginx (linux/amd64): done in", "assemble (linux/amd64): done in",
		"smoke (linux/amd64): started", "push (linux/amd64): done in"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the build log lacks the progress line %q", want)
		}
	}

	// Again through the command line with a signing key: signed and attested (issue 31).
	signedPushOnTheCommandLine(ctx, t, []string{"build", "--engine", "host", "--lock", testLockPath, "--mirror", srv.URL,
		"--platform", "linux/amd64", "--cache", testenv.BuildCacheDir(), "--image", repo, "--push", "--runtime-image", base.String(),
		"--revision", "0123456789abcdef0123456789abcdef01234567"},
		d, filepath.Join(dir, "nginx.tar.spdx.json"),
		[]string{"--lock", testLockPath, "--mirror", srv.URL, "--cache", testenv.BuildCacheDir()},
		"0123456789abcdef0123456789abcdef01234567", base)

	// Again, as a GitHub Actions step: the same digest, nothing uploaded, outputs set.
	outFile := filepath.Join(dir, "github_output")
	if err := os.WriteFile(outFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", outFile)
	t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(dir, "step_summary"))
	stdout.Reset()
	stderr.Reset()
	if err := runBuild(ctx, flags(filepath.Join(dir, "layout")), &stdout, &stderr); err != nil {
		t.Fatalf("second build --push: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), d.String()) {
		t.Errorf("the second build gave another digest (not reproducible): %q, first %s", stdout.String(), d)
	}
	if !strings.Contains(stderr.String(), "already in the registry") {
		t.Errorf("the second build pushed again:\n%s", stderr.String())
	}
	checkActionsGroups(t, stderr.String())
	outs, _ := os.ReadFile(outFile)
	if !strings.Contains(string(outs), d.DigestStr()) {
		t.Errorf("GITHUB_OUTPUT lacks the digest:\n%s", outs)
	}
}

// checkAnnotations: the pushed image names its static libcrypt and the --runtime-image it
// was built on.
func checkAnnotations(t *testing.T, d, base name.Digest) {
	t.Helper()
	pushed, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pushed.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Annotations[image.AnnotationPrefix+image.Libcrypt+".version"]; got == "" {
		t.Error("the image does not record the static libcrypt's version")
	}
	if got, want := m.Annotations["org.opencontainers.image.base.name"], base.Context().String(); got != want {
		t.Errorf("base.name annotation = %q, want the --runtime-image's repository %q", got, want)
	}
	if got, want := m.Annotations["org.opencontainers.image.base.digest"], base.DigestStr(); got != want {
		t.Errorf("base.digest annotation = %q, want the --runtime-image's digest %q", got, want)
	}
}

// checkActionsGroups: in Actions each step is a collapsible group; a second build takes
// every stage from the cache and says so.
func checkActionsGroups(t *testing.T, log string) {
	t.Helper()
	for _, want := range []string{"::group::zlib (linux/amd64)\n", "::group::push (linux/amd64)\n", "::endgroup::\n",
		"openssl (linux/amd64): done in", "from cache"} {
		if !strings.Contains(log, want) {
			t.Errorf("the Actions build log lacks %q", want)
		}
	}
	if strings.Count(log, "::group::") != strings.Count(log, "::endgroup::") {
		t.Errorf("unbalanced groups in the Actions log:\n%s", log)
	}
}

// A tampered tarball, or a tampered signature over an intact one, stops the build before
// anything is built, naming the file: the test twin's OpenSSL (signed by upstream, verified
// against the vendored key), as the shipped lock's nginx and OpenSSL are.
func TestBuildTamperedTarballCreatesNothing(t *testing.T) {
	const tarball, sum = "openssl-3.5.7.tar.gz", "a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8"
	mirror := testenv.MirrorDir(t)
	for _, tc := range []struct {
		file string
		want []string
	}{
		{tarball, []string{tarball, sum, "nothing was built"}},
		{tarball + ".asc", []string{tarball + ".asc", "nothing was built"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tampered, err := os.ReadFile(filepath.Join(mirror, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(tc.file, ".asc") {
				// A byte of the signature's base64 body, past the armor header line.
				i := bytes.Index(tampered, []byte("\n\n")) + 40
				tampered[i] ^= 0x01
			} else {
				tampered[len(tampered)/2] ^= 0x01
			}
			files := http.FileServer(http.Dir(mirror))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/"+tc.file {
					w.Write(tampered)
					return
				}
				files.ServeHTTP(w, r)
			}))
			defer srv.Close()
			dir := t.TempDir()
			t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg")) // the source cache
			out, cache := filepath.Join(dir, "tree"), filepath.Join(dir, "cache")
			var stderr bytes.Buffer
			err = runBuild(context.Background(), buildFlags{engine: "host", tree: out, lockFile: testLockPath,
				mirror: srv.URL, platform: mustPlatforms("linux/amd64"), cache: cache}, io.Discard, &stderr)
			if err == nil {
				t.Fatalf("a tampered %s was accepted", tc.file)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was created: %v", out, err)
			}
			// --cache holds the verified sources too (DIR/sources): nothing else of the build
			// may be there, and not the tampered file.
			entries, _ := os.ReadDir(cache)
			for _, e := range entries {
				if e.Name() != "sources" {
					t.Errorf("the build created %s in its cache", filepath.Join(cache, e.Name()))
				}
			}
			if _, err := os.Stat(filepath.Join(cache, "sources", "sha256", sum, tc.file)); err == nil {
				t.Errorf("the tampered %s has a cache entry", tc.file)
			}
		})
	}
}
