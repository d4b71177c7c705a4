// Package ocitest builds and checks images by their media types for tests: a Docker-typed
// twin of an image, and a check that an image is OCI throughout and internally consistent.
// pipeline/internal/ocimedia's conversion and pipeline/image's assembly on a Docker-typed
// base are both tested with it.
package ocitest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// DockerTwin is img under Docker schema 2 media types: the same layer blobs and the same
// config content, as `docker build`, BuildKit's default output and many bases on Docker
// Hub are typed.
func DockerTwin(t testing.TB, img v1.Image) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.DockerManifestSchema2), types.DockerConfigJSON)
	for _, l := range layers {
		if out, err = mutate.Append(out, mutate.Addendum{Layer: l, MediaType: types.DockerLayer}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err = mutate.ConfigFile(out, cf); err != nil {
		t.Fatal(err)
	}
	if mt, _ := out.MediaType(); mt != types.DockerManifestSchema2 {
		t.Fatalf("the Docker twin is %s", mt)
	}
	return out
}

// CheckAllOCI fails t unless img's manifest, config and every layer are OCI-typed, both in
// the manifest and in what its layers report, and the image is internally consistent
// (go-containerregistry's validate: digests, sizes, diff IDs).
func CheckAllOCI(t *testing.T, img v1.Image) *v1.Manifest {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s, config %s: want %s, %s", m.MediaType, m.Config.MediaType, types.OCIManifestSchema1, types.OCIConfigJSON)
	}
	for i, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer %d (%s): media type %s, want %s", i, l.Digest, l.MediaType, types.OCILayer)
		}
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer %d reports media type %s, want %s", i, mt, types.OCILayer)
		}
	}
	checkBlobs(t, img, m)
	return m
}

// checkBlobs fails t unless the manifest's digests and sizes are those of the blobs the
// image serves, and the config's diff IDs those of the layers' contents: what a registry
// or umoci checks when it is given the image.
func checkBlobs(t *testing.T, img v1.Image, m *v1.Manifest) {
	t.Helper()
	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := "sha256:" + sha256Hex(raw); got != m.Config.Digest.String() || int64(len(raw)) != m.Config.Size {
		t.Errorf("config blob is %s (%d bytes), manifest says %s (%d bytes)", got, len(raw), m.Config.Digest, m.Config.Size)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		t.Fatalf("config lists %d diff IDs for %d layers", len(cf.RootFS.DiffIDs), len(m.Layers))
	}
	for i, desc := range m.Layers {
		l, err := img.LayerByDigest(desc.Digest)
		if err != nil {
			t.Fatalf("layer %d (%s): %v", i, desc.Digest, err)
		}
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != desc.Digest.String() || n != desc.Size {
			t.Errorf("layer %d blob is %s (%d bytes), manifest says %s (%d bytes)", i, got, n, desc.Digest, desc.Size)
		}
		rc, err = l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		h.Reset()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != cf.RootFS.DiffIDs[i].String() {
			t.Errorf("layer %d content is %s, config's diff ID %s", i, got, cf.RootFS.DiffIDs[i])
		}
	}
	rm, err := img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() != "sha256:"+sha256Hex(rm) {
		t.Errorf("Digest() %s is not the digest of RawManifest()", d)
	}
}
