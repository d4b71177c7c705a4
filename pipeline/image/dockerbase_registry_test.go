//go:build integration

package image

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/ocitest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

// TestDockerBaseRealRegistry is issue 13's case against Debian's docker-registry: a base
// pushed with Docker schema 2 media types is pulled the way a build pulls its runtime
// base (PullBase), the image is assembled on it and published with its SBOM, and what the
// registry then serves is OCI throughout, with the base's layer blobs, and the SBOM
// referrer (an OCI feature) attached to it.
func TestDockerBaseRealRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	l := testLock(t)

	docker := ocitest.DockerTwin(t, syntheticBase(t, "amd64"))
	baseTag, err := name.ParseReference(reg.Ref("base/docker-typed:nonroot"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(baseTag, docker, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing the Docker-typed base: %v\nregistry log:\n%s", err, reg.Log())
	}
	desc, err := remote.Get(baseTag, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if desc.MediaType != types.DockerManifestSchema2 {
		t.Fatalf("the registry serves the base as %s, want %s to start from", desc.MediaType, types.DockerManifestSchema2)
	}
	baseRef := baseTag.Context().Digest(desc.Digest.String()).String()
	base, err := PullBase(ctx, baseRef, v1.Platform{OS: "linux", Architecture: "amd64"}, quick()...)
	if err != nil {
		t.Fatal(err)
	}

	img, err := Assemble(base, syntheticTree(t, t0, 0, false), l, WithBaseRef(baseRef))
	if err != nil {
		t.Fatal(err)
	}
	sbom, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Ref("nginx-forge/on-docker-base")
	res, err := Publish(ctx, img, repo, []string{"test"}, quick(
		WithSBOM(sbom, time.Unix(l.SourceDateEpoch, 0)),
		WithVerify(func(ctx context.Context, ref name.Digest) error {
			_, err := remote.Image(ref, remote.WithContext(ctx))
			return err
		}),
	)...)
	if err != nil {
		t.Fatalf("%v\nregistry log:\n%s", err, reg.Log())
	}

	got, err := remote.Get(res.Digest, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if got.MediaType != types.OCIManifestSchema1 {
		t.Errorf("the registry serves the image as %s, want %s", got.MediaType, types.OCIManifestSchema1)
	}
	pulled, err := got.Image()
	if err != nil {
		t.Fatal(err)
	}
	m := ocitest.CheckAllOCI(t, pulled) // streams every blob back from the registry
	bm, err := docker.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != len(bm.Layers)+1 {
		t.Fatalf("pulled image has %d layers, want the base's %d and nginx's", len(m.Layers), len(bm.Layers))
	}
	for i, bl := range bm.Layers {
		if m.Layers[i].Digest != bl.Digest {
			t.Errorf("layer %d is %s, want the base's blob %s", i, m.Layers[i].Digest, bl.Digest)
		}
	}
	if m.Annotations[annotationBaseDigest] != desc.Digest.String() {
		t.Errorf("%s = %q, want the base as pulled, %s", annotationBaseDigest, m.Annotations[annotationBaseDigest], desc.Digest)
	}
	refs, err := remote.Referrers(res.Digest, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if rm, _ := refs.IndexManifest(); len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != sbomArtifactType {
		t.Errorf("referrers of %s: %+v, want the SBOM", res.Digest, rm.Manifests)
	}
}
