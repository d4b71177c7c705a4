//go:build integration

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/buildkittest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestDockerfileBuildsAndPassesSmoke builds the Dockerfile `ci dockerfile` renders with a
// real BuildKit (what `docker build` runs), and runs the same smoke suite on the result as
// on the Go pipeline's image: the Dockerfile path is proven to give a working, hardened
// image, not only kept in step with the plan by the golden test.
//
// The Dockerfile is rendered from the test lock, with --mirror pointing at the loopback
// mirror of the real upstream tarballs (the committed dockerfiles/Dockerfile differs only
// in its versions and URLs). The builder is Debian trixie from debootstrap (minbase: the
// builder stage installs the compilers with apt itself, through its cache mounts), the
// runtime the stand-in distroless base; both are served by the loopback registry, where
// the image is pushed. A second build with nothing changed must run no step.
func TestDockerfileBuildsAndPassesSmoke(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	needHostSmoke(t)
	reg := registrytest.Start(t)
	bk := buildkittest.Start(t, buildkittest.Options{PlainHTTP: []string{reg.Host}})
	runtime := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	builder := basetest.BuilderFor(t, reg.Host, "debian", basetest.Options{})
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()

	dockerfile := filepath.Join(t.TempDir(), "Dockerfile")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"dockerfile", "--lock", testLockPath, "--mirror", srv.URL, "-o", dockerfile}, &stdout, &stderr); code != 0 {
		t.Fatalf("ci dockerfile exited %d: %s", code, stderr.String())
	}
	build := buildkittest.Build{
		Dockerfile: dockerfile,
		Args:       map[string]string{"BUILDER_IMAGE": builder.String(), "RUNTIME_IMAGE": runtime.String()},
		Push:       reg.Host + "/nginx-forge/dockerfile:test",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()

	start := time.Now()
	first, err := bk.Build(ctx, build)
	if err != nil {
		t.Fatalf("building the rendered Dockerfile: %v\nbuildkitd:\n%s", err, bk.Log())
	}
	t.Logf("built %s@%s in %s; RUN steps executed (not from BuildKit's cache): %d", build.Push, first.Digest, time.Since(start).Round(time.Second), len(buildkittest.ExecutedRuns(first.Log)))

	expect, err := smokeExpect(testLockPath, "")
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	ref := reg.Host + "/nginx-forge/dockerfile@" + first.Digest
	img, err := pullImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := host.SmokeImage(ctx, img, smoke.Options{Expect: expect})
	if err == nil {
		err = printSmoke(rep, "image "+ref, false, &table)
	}
	if err != nil {
		t.Fatalf("the Dockerfile's image fails the smoke tests: %v\n%s", err, table.String())
	}
	t.Logf("smoke tests of the Dockerfile's image:\n%s", table.String())

	start = time.Now()
	second, err := bk.Build(ctx, build)
	if err != nil {
		t.Fatalf("building the rendered Dockerfile again: %v", err)
	}
	if ran := buildkittest.ExecutedRuns(second.Log); len(ran) > 0 {
		t.Errorf("a second build with nothing changed ran %d RUN step(s) instead of taking them from the cache:\n%s", len(ran), strings.Join(ran, "\n"))
	} else {
		t.Logf("second build in %s, every RUN step from the cache", time.Since(start).Round(time.Millisecond))
	}
	if second.Digest != first.Digest {
		t.Logf("note: the second build gave %s, the first %s", second.Digest, first.Digest)
	}
}

// pullImage pulls ref with the registry credentials every access uses.
func pullImage(ctx context.Context, ref string) (v1.Image, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	return remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(image.Keychain()))
}
