package image

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestSizeOfReadsNoBaseBlob measures an image whose base lives in a registry: the sizes
// match the layers', and no blob is fetched (compressed sizes come from the manifest, and
// the top layer is local).
func TestSizeOfReadsNoBaseBlob(t *testing.T) {
	reg := newInProcessRegistry(t)
	ref, err := name.ParseReference(reg.Host + "/base:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, syntheticBase(t, "amd64")); err != nil {
		t.Fatal(err)
	}
	base, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Assemble(base, syntheticTree(t, time.Unix(0, 0), 0, false), testLock(t), WithBaseRef(ref.String()))
	if err != nil {
		t.Fatal(err)
	}
	reg.reset()

	s, err := SizeOf(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.requests() {
		if strings.Contains(r, "/blobs/") {
			t.Errorf("SizeOf read a base blob: %s", r)
		}
	}

	layers, _ := img.Layers()
	if len(s.Layers) != len(layers) || len(layers) != 2 {
		t.Fatalf("SizeOf gave %d layer sizes for %d layers (want 2)", len(s.Layers), len(layers))
	}
	var total int64
	for i, l := range layers {
		n, _ := l.Size()
		if s.Layers[i] != n {
			t.Errorf("layer %d: SizeOf says %d bytes, the layer %d", i, s.Layers[i], n)
		}
		total += n
	}
	rc, _ := layers[1].Uncompressed()
	u, _ := io.Copy(io.Discard, rc)
	rc.Close()
	// A tar is whole 512-byte records, and holds at least the tree's file bodies.
	if s.TopUncompressed != u || u%512 != 0 || u < 100 {
		t.Errorf("top layer uncompressed: SizeOf %d, read %d", s.TopUncompressed, u)
	}
	if s.Total() != total {
		t.Errorf("Total %d, want %d", s.Total(), total)
	}
	want := fmt.Sprintf("%d bytes compressed: base %d in 1 layer(s), nginx layer %d (%d uncompressed)", total, s.Layers[0], s.Layers[1], u)
	if s.String() != want {
		t.Errorf("String() = %q\nwant      %q", s.String(), want)
	}
}
