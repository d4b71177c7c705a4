package basetest

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/standin"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/ocitest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// findMirror sets Mirror, when not given, to the Debian mirror from the apt sources
// (testenv.DebianMirror: this machine's apt sources, or NGINX_FORGE_DEBIAN_MIRROR).
func findMirror(o *Options) error {
	if o.Mirror != "" {
		return nil
	}
	m, err := testenv.DebianMirror()
	if err != nil {
		return err
	}
	o.Mirror = m
	return nil
}

// For tests returns the stand-in base image (made or taken from the cache). When the
// Debian archive cannot be reached or apt is missing it skips, or fails under
// NGINX_FORGE_E2E=1, saying so.
func For(t testing.TB, o Options) (v1.Image, *Rootfs) {
	t.Helper()
	testenv.Tool(t, "apt-get", "apt")
	testenv.Tool(t, "dpkg-deb", "dpkg")
	if o.Progress == nil {
		o.Progress = testenv.Progress(t)
	}
	err := findMirror(&o)
	var r *Rootfs
	if err == nil {
		r, err = standin.Build(context.Background(), o)
	}
	if err != nil {
		testenv.Missing(t, "the stand-in distroless base ("+err.Error()+")",
			"let the machine reach the Debian mirror from the apt sources (or set "+testenv.DebianMirrorEnv+"), or pre-fill "+defaultCacheDir+" by running the basetest tests once")
	}
	img, err := Image(r, o.Arch)
	if err != nil {
		t.Fatalf("making the stand-in base image: %v", err)
	}
	return img, r
}

// PushFor pushes the stand-in base to host/repo:nonroot (host like "127.0.0.1:5000")
// and returns its digest reference.
func PushFor(t testing.TB, host, repo string, o Options) name.Digest {
	t.Helper()
	img, _ := For(t, o)
	d, err := Push(context.Background(), img, host+"/"+repo+":nonroot")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// BuilderFor pushes the stand-in builder image (see BuilderImage) to host/repo:SUITE and
// returns its digest reference. Without root, debootstrap or the Debian archive it skips,
// or fails under NGINX_FORGE_E2E=1, saying so.
func BuilderFor(t testing.TB, host, repo string, o Options) name.Digest {
	t.Helper()
	testenv.Tool(t, "debootstrap", "debootstrap")
	testenv.Root(t)
	if o.Progress == nil {
		o.Progress = testenv.Progress(t)
	}
	img, err := BuilderImage(context.Background(), o)
	if err != nil {
		testenv.Missing(t, "the stand-in builder image ("+err.Error()+")",
			"let the machine reach the Debian mirror from the apt sources (or set "+testenv.DebianMirrorEnv+"), or pre-fill "+defaultCacheDir+" by running the ci package's Dockerfile test once")
	}
	o.Defaults()
	d, err := Push(context.Background(), img, host+"/"+repo+":"+o.Suite)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// DockerTypedFor is the stand-in base with Docker schema 2 media types (manifest, config,
// layers) and the same blobs, as many real bases are published (the lab's stand-ins are
// too): what an image assembled on it must not carry into its own manifest.
func DockerTypedFor(t testing.TB, o Options) v1.Image {
	t.Helper()
	img, _ := For(t, o)
	return DockerTyped(t, img)
}

// DockerTyped is img with Docker schema 2 media types (manifest, config, layers) and the
// same blobs (ocitest.DockerTwin).
func DockerTyped(t testing.TB, img v1.Image) v1.Image {
	t.Helper()
	return ocitest.DockerTwin(t, img)
}
