package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// t0 is any fixed mtime for synthetic trees (the layer stamps SOURCE_DATE_EPOCH anyway).
var t0 = time.Unix(1, 0)

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// dockerTwin is img under Docker schema 2 media types: the same layer blobs and the same
// config content, as `docker build`, BuildKit's default output and many bases on Docker
// Hub are typed.
func dockerTwin(t *testing.T, img v1.Image) v1.Image {
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

// checkAllOCI fails t unless img's manifest, config and every layer are OCI-typed, both in
// the manifest and in what its layers report, and the image is internally consistent
// (go-containerregistry's validate: digests, sizes, diff IDs).
func checkAllOCI(t *testing.T, img v1.Image) *v1.Manifest {
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

// TestToOCI: a Docker schema 2 image becomes OCI throughout with the same blobs (layer
// digests and sizes, config bytes); an OCI image is returned as it is.
func TestToOCI(t *testing.T) {
	docker, err := random.Image(512, 3)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := docker.MediaType(); mt != types.DockerManifestSchema2 {
		t.Fatalf("random.Image gave %s, want a Docker schema 2 image to start from", mt)
	}
	oci, err := ToOCI(docker)
	if err != nil {
		t.Fatal(err)
	}
	m := checkAllOCI(t, oci)
	dm, _ := docker.Manifest()
	if len(m.Layers) != len(dm.Layers) {
		t.Fatalf("%d layers, want %d", len(m.Layers), len(dm.Layers))
	}
	for i := range m.Layers {
		if m.Layers[i].Digest != dm.Layers[i].Digest || m.Layers[i].Size != dm.Layers[i].Size {
			t.Errorf("layer %d: %s (%d bytes), want the same blob %s (%d bytes)", i, m.Layers[i].Digest, m.Layers[i].Size, dm.Layers[i].Digest, dm.Layers[i].Size)
		}
	}
	wantCfg, _ := docker.RawConfigFile()
	gotCfg, _ := oci.RawConfigFile()
	if !bytes.Equal(gotCfg, wantCfg) || m.Config.Digest != dm.Config.Digest {
		t.Errorf("config blob changed: %s, want %s", m.Config.Digest, dm.Config.Digest)
	}

	same, err := ToOCI(oci)
	if err != nil || same != oci {
		t.Errorf("an OCI image was rewritten (err %v)", err)
	}
	base := syntheticBase(t, "amd64")
	if same, err := ToOCI(base); err != nil || same != base {
		t.Errorf("the synthetic OCI base was rewritten (err %v)", err)
	}
}

// TestToOCIMixed: an OCI manifest listing Docker-typed layers (what Assemble made on a
// Docker-typed base before ToOCI, and what issue 13's pushed image is) is made consistent,
// keeping the manifest's annotations.
func TestToOCIMixed(t *testing.T) {
	docker, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	mixed := mutate.MediaType(mutate.ConfigMediaType(docker, types.OCIConfigJSON), types.OCIManifestSchema1)
	mixed = mutate.Annotations(mixed, map[string]string{annotationTitle: "nginx-forge"}).(v1.Image)
	if m, _ := mixed.Manifest(); m.Layers[0].MediaType != types.DockerLayer {
		t.Fatalf("setup: layer 0 is %s, want a Docker-typed layer in an OCI manifest", m.Layers[0].MediaType)
	}
	oci, err := ToOCI(mixed)
	if err != nil {
		t.Fatal(err)
	}
	if m := checkAllOCI(t, oci); m.Annotations[annotationTitle] != "nginx-forge" {
		t.Errorf("annotations lost: %v", m.Annotations)
	}
}

// TestToOCIRefuses names what it cannot convert.
func TestToOCIRefuses(t *testing.T) {
	docker, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	schema1 := mutate.MediaType(docker, types.DockerManifestSchema1Signed)
	if _, err := ToOCI(schema1); err == nil || !strings.Contains(err.Error(), string(types.DockerManifestSchema1Signed)) {
		t.Errorf("schema 1 manifest: %v, want an error naming its media type", err)
	}
	l, _ := docker.Layers()
	foreign, err := mutate.Append(mutate.MediaType(empty.Image, types.DockerManifestSchema2), mutate.Addendum{Layer: l[0], MediaType: types.DockerForeignLayer})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := l[0].Digest()
	if _, err := ToOCI(foreign); err == nil || !strings.Contains(err.Error(), string(types.DockerForeignLayer)) || !strings.Contains(err.Error(), d.String()) {
		t.Errorf("foreign layer: %v, want an error naming the layer and its media type", err)
	}
}

// TestAssembleOnDockerBase: on a Docker-typed base the assembled image is OCI throughout,
// keeps the base's layer blobs, and is byte for byte the image its OCI twin (same blobs)
// gives, when both are named by the same reference: the conversion changes media types and
// nothing else. It is written to an OCI layout and read back whole.
func TestAssembleOnDockerBase(t *testing.T) {
	ociBase := syntheticBase(t, "amd64")
	dockerBase := dockerTwin(t, ociBase)
	tree := syntheticTree(t, t0, 0, false)
	// The same name and digest for both, so the base annotations agree; without a
	// digest each would carry its own base's digest (see TestAssembleDockerBaseDigest).
	ref := WithBaseRef("gcr.io/distroless/base-nossl-debian13@sha256:" + strings.Repeat("ab", 32))
	fromDocker, err := Assemble(dockerBase, tree, testLock(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	fromOCI, err := Assemble(ociBase, tree, testLock(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	m := checkAllOCI(t, fromDocker)
	bm, _ := dockerBase.Manifest()
	if len(m.Layers) != len(bm.Layers)+1 {
		t.Fatalf("%d layers, want the base's %d and nginx's", len(m.Layers), len(bm.Layers))
	}
	for i, l := range bm.Layers {
		if m.Layers[i].Digest != l.Digest || m.Layers[i].Size != l.Size {
			t.Errorf("base layer %d: %s (%d bytes), want the base's blob %s (%d bytes)", i, m.Layers[i].Digest, m.Layers[i].Size, l.Digest, l.Size)
		}
	}
	dd, _ := fromDocker.Digest()
	do, _ := fromOCI.Digest()
	if dd != do {
		rd, _ := fromDocker.RawManifest()
		ro, _ := fromOCI.RawManifest()
		t.Errorf("Docker-typed base gave %s, its OCI twin %s; manifests:\n%s\n%s", dd, do, rd, ro)
	}

	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(fromDocker); err != nil {
		t.Fatal(err)
	}
	back, err := p.Image(dd)
	if err != nil {
		t.Fatal(err)
	}
	checkAllOCI(t, back)
}

// TestAssembleDockerBaseDigest: with the default base reference, the base digest
// annotation names the base as it was pulled (the Docker manifest's digest), not the
// retyped manifest nobody can pull.
func TestAssembleDockerBaseDigest(t *testing.T) {
	dockerBase := dockerTwin(t, syntheticBase(t, "amd64"))
	img, err := Assemble(dockerBase, syntheticTree(t, t0, 0, false), testLock(t), WithBaseRef("registry.example/base:nonroot"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	want, _ := dockerBase.Digest()
	if got := m.Annotations[annotationBaseDigest]; got != want.String() {
		t.Errorf("%s = %s, want the Docker base's own digest %s", annotationBaseDigest, got, want)
	}
}
