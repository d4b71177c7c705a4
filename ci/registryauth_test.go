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
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestPasswordRegistry: `ci build --push` and `ci smoke --image` against a registry that
// requires a password use the one login in DOCKER_CONFIG (what `docker login` writes): the
// build pulls its runtime base from there, pushes, and pulls the pushed digest back for its
// smoke tests; smoke then pulls that digest and runs its checks. With a DOCKER_CONFIG
// lacking the login, smoke is refused by the registry. No output carries the password.
func TestPasswordRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds (from the build cache) and runs the image: not with -short")
	}
	mirror := testenv.MirrorDir(t)
	needHostSmoke(t)
	const password = "s3cr3t-registry-pa55"
	reg := registrytest.Start(t, registrytest.WithBasicAuth("robot", password))
	loggedIn, anonymous := reg.DockerConfig(t), registrytest.Start(t).DockerConfig(t)
	t.Setenv("DOCKER_CONFIG", loggedIn)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	baseImg, _ := basetest.For(t, basetest.Options{})
	base, err := basetest.Push(ctx, baseImg, reg.Ref("distroless/base-nossl-debian13:nonroot"), remote.WithAuthFromKeychain(image.Keychain()))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()

	var stdout, stderr bytes.Buffer
	err = runBuild(ctx, buildFlags{engine: "host", lockFile: testLockPath, mirror: srv.URL, platform: mustPlatforms("linux/amd64"),
		cache: testenv.BuildCacheDir(), image: reg.Ref("nginx-forge"), push: true, runtimeImage: base.String(),
		output: filepath.Join(t.TempDir(), "nginx.tar"), revision: "0123456789abcdef0123456789abcdef01234567", verbose: true}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("build --push with the login in DOCKER_CONFIG: %v\n%s", err, stderr.String())
	}
	noPassword(t, "build --push", stdout.String()+stderr.String(), password)
	d, err := name.NewDigest(strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatalf("build --push printed %q, want REPO@sha256:...: %v", stdout.String(), err)
	}
	if !strings.Contains(stderr.String(), "smoke checks of "+d.String()) {
		t.Errorf("the build did not smoke-test the pushed digest:\n%s", stderr.String())
	}

	code, out, errOut := runSmokeCmd(t, "--image", d.String(), "--expect-lock", testLockPath)
	t.Logf("ci smoke --image %s (logged in): exit %d\n%s%s", d, code, out, errOut)
	noPassword(t, "smoke", out+errOut, password)
	if code != 0 || !strings.Contains(out, d.DigestStr()) || !strings.Contains(out, "0 failed") {
		t.Errorf("smoke with the login: exit %d, want 0 and the table for %s", code, d.DigestStr())
	}

	t.Setenv("DOCKER_CONFIG", anonymous)
	code, out, errOut = runSmokeCmd(t, "--image", d.String())
	noPassword(t, "smoke", out+errOut, password)
	if code != 1 || !strings.Contains(errOut, "pulling image "+d.String()) || !strings.Contains(errOut, "UNAUTHORIZED") {
		t.Errorf("smoke without the login: exit %d, stderr %q; want 1, the pull refused (UNAUTHORIZED)", code, errOut)
	}
}

func noPassword(t *testing.T, what, out, password string) {
	t.Helper()
	if strings.Contains(out, password) {
		t.Errorf("%s printed the registry password:\n%s", what, out)
	}
}
