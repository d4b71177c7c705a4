package image

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/ocitest"
)

// t0 is any fixed mtime for synthetic trees (the layer stamps SOURCE_DATE_EPOCH anyway).
var t0 = time.Unix(1, 0)

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestAssembleOnDockerBase: on a Docker-typed base the assembled image is OCI throughout,
// keeps the base's layer blobs, and is byte for byte the image its OCI twin (same blobs)
// gives, when both are named by the same reference: the conversion changes media types and
// nothing else. It is written to an OCI layout and read back whole.
func TestAssembleOnDockerBase(t *testing.T) {
	ociBase := syntheticBase(t, "amd64")
	dockerBase := ocitest.DockerTwin(t, ociBase)
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
	m := ocitest.CheckAllOCI(t, fromDocker)
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
	ocitest.CheckAllOCI(t, back)
}

// TestAssembleDockerBaseDigest: with the default base reference, the base digest
// annotation names the base as it was pulled (the Docker manifest's digest), not the
// retyped manifest nobody can pull.
func TestAssembleDockerBaseDigest(t *testing.T) {
	dockerBase := ocitest.DockerTwin(t, syntheticBase(t, "amd64"))
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
