//go:build integration

package registryauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// Every way the library reaches a registry, given no keychain, authenticates with the
// login in $DOCKER_CONFIG (what `docker login` writes) against the real registry requiring
// a password; with a configuration lacking that login each is refused (401), and no error
// carries the password.
func TestEveryAccessUsesTheDockerConfig(t *testing.T) {
	testenv.Root(t)
	testenv.Tool(t, "runc", "runc")
	testenv.Tool(t, "umoci", "umoci")
	const user, password = "robot", "s3cr3t-registry-pa55"
	reg := registrytest.Start(t, registrytest.WithBasicAuth(user, password))
	loggedIn, anonymous := reg.DockerConfig(t), registrytest.Start(t).DockerConfig(t)
	base, _ := basetest.For(t, basetest.Options{})
	repo := reg.Ref("nginx-forge/base")
	platform := v1.Platform{OS: "linux", Architecture: "amd64"}
	var digest string // REPO@sha256:..., once pushed

	access := []struct {
		name string
		do   func(context.Context) error
	}{
		{"image.Publish", func(ctx context.Context) error {
			p, err := image.Publish(ctx, base, repo, []string{"nonroot"})
			if err == nil {
				digest = p.Digest.String()
			}
			return err
		}},
		{"image.PullBase", func(ctx context.Context) error {
			_, err := image.PullBase(ctx, repo+":nonroot", platform)
			return err
		}},
		{"image.BuildIndex", func(ctx context.Context) error {
			_, err := image.BuildIndex(ctx, []string{digest})
			return err
		}},
		{"upstream.ImageResolver", func(ctx context.Context) error {
			d, err := upstream.NewImageResolver().Digest(ctx, repo+":nonroot")
			if err == nil && !strings.HasSuffix(digest, "@"+d) {
				t.Errorf("resolver: nonroot is %s, pushed %s", d, digest)
			}
			return err
		}},
		{"ocirun.Pull", func(ctx context.Context) error {
			b, err := ocirun.Pull(ctx, digest, ocirun.WithDir(t.TempDir()))
			if err == nil {
				b.Close()
			}
			return err
		}},
		{"image.Keychain (ci smoke --image, the build's verifier)", func(ctx context.Context) error {
			r, err := name.ParseReference(digest)
			if err != nil {
				return err
			}
			_, err = remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(image.Keychain()))
			return err
		}},
	}
	run := func(config string) map[string]error {
		t.Setenv("DOCKER_CONFIG", config)
		errs := map[string]error{}
		for _, a := range access {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			errs[a.name] = a.do(ctx)
			cancel()
		}
		return errs
	}

	for n, err := range run(loggedIn) {
		if err != nil {
			t.Errorf("%s with the login in DOCKER_CONFIG: %v", n, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for n, err := range run(anonymous) {
		switch {
		case err == nil:
			t.Errorf("%s without the login: succeeded against a registry requiring a password", n)
		case !strings.Contains(err.Error(), "UNAUTHORIZED") && !strings.Contains(err.Error(), "401 Unauthorized"):
			t.Errorf("%s without the login: %v, want the registry's 401", n, err)
		case strings.Contains(err.Error(), password):
			t.Errorf("%s: the error carries the password: %v", n, err)
		}
	}
}
