//go:build integration

package upstream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// Base images are pinned by the digest of an index that covers every platform the build
// targets; anything less is refused. Against Debian's docker-registry, the registry people
// run (it validates manifests: the index's images must be there first).
func TestImageIndexPlatforms(t *testing.T) {
	reg := registrytest.Start(t)
	r := upstream.NewImageResolver(upstream.WithRegistry(reg.Host))
	ctx := context.Background()
	const ref = "docker.io/library/ubuntu:24.04"
	want := buildPlatforms

	both := upstreamtest.PushIndex(t, reg.Host, ref, "linux/amd64", "linux/arm64/v8")
	if d, err := r.Digest(ctx, ref); err != nil || d != both {
		t.Fatalf("Digest = %s, %v; want the index digest %s", d, err, both)
	}
	plats, err := r.IndexPlatforms(ctx, ref, both, want)
	if err != nil || strings.Join(plats, ",") != "linux/amd64,linux/arm64/v8" {
		t.Errorf("IndexPlatforms = %v, %v", plats, err)
	}

	amd64 := upstreamtest.PushIndex(t, reg.Host, ref, "linux/amd64")
	if _, err := r.IndexPlatforms(ctx, ref, amd64, want); err == nil || !strings.Contains(err.Error(), "has no linux/arm64 manifest (it covers linux/amd64)") {
		t.Errorf("amd64-only index: err = %v", err)
	}
	single := upstreamtest.PushImage(t, reg.Host, ref)
	if _, err := r.IndexPlatforms(ctx, ref, single, want); err == nil || !strings.Contains(err.Error(), "is a single-platform manifest") {
		t.Errorf("single manifest: err = %v", err)
	}
}
