//go:build integration

package ocirun_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestImageOnDockerBaseRuns is issue 13's failure end to end: the stand-in distroless base,
// published with Docker schema 2 media types in the loopback registry, pulled, the real
// nginx assembled on it and pushed, then pulled by digest and run in runc, where umoci
// used to refuse it ("blob is not correct mediatype").
func TestImageOnDockerBaseRuns(t *testing.T) {
	testenv.Root(t)
	testenv.Tool(t, "runc", "runc")
	testenv.Tool(t, "umoci", "umoci")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	tree := testenv.BuiltTree(t)
	standIn, _ := basetest.For(t, basetest.Options{})
	reg := registrytest.Start(t)

	baseRef, err := basetest.Push(ctx, basetest.DockerTyped(t, standIn), reg.Ref("distroless/docker-typed:nonroot"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := remote.Image(baseRef, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := base.MediaType(); mt != types.DockerManifestSchema2 {
		t.Fatalf("the registry serves the base as %s, want %s to start from", mt, types.DockerManifestSchema2)
	}
	img, err := image.Assemble(base, tree, l, image.WithBaseRef(baseRef.String()))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := basetest.Push(ctx, img, reg.Ref("nginx-forge/on-docker-base:test"))
	if err != nil {
		t.Fatal(err)
	}

	b, err := ocirun.Pull(ctx, ref.String(), ocirun.WithProgress(testenv.Progress(t)))
	if err != nil {
		t.Fatalf("pulling and unpacking %s: %v", ref, err)
	}
	defer b.Close()
	if want, _ := img.Digest(); b.Digest() != want {
		t.Errorf("ran %s, pushed %s", b.Digest(), want)
	}
	c, err := b.Start(ctx, contractTmpfs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	waitHTTP(t, ctx, c)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if exited, how := c.Exited(); !exited || how != "exited with status 0" {
		t.Errorf("after Stop: exited=%v %q, want a clean exit on the image's stop signal", exited, how)
	}
}
