package image

import (
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Size is what an assembled image costs: every layer's compressed size (what a pull
// transfers), and the top layer (the install tree Assemble adds) also uncompressed.
// Compressed sizes come from the manifest, so the lazily pulled base is not downloaded
// just to be measured; the top layer is local, so reading it costs nothing remote.
type Size struct {
	Layers          []int64 // compressed, base first, the install tree last
	TopUncompressed int64
}

// Total is the compressed size of the whole image.
func (s Size) Total() int64 {
	var t int64
	for _, n := range s.Layers {
		t += n
	}
	return t
}

func (s Size) String() string {
	if len(s.Layers) == 0 {
		return "no layers"
	}
	top := s.Layers[len(s.Layers)-1]
	return fmt.Sprintf("%d bytes compressed: base %d in %d layer(s), nginx layer %d (%d uncompressed)",
		s.Total(), s.Total()-top, len(s.Layers)-1, top, s.TopUncompressed)
}

// SizeOf measures img as Size describes.
func SizeOf(img v1.Image) (Size, error) {
	m, err := img.Manifest()
	if err != nil {
		return Size{}, fmt.Errorf("reading the image manifest: %w", err)
	}
	var s Size
	for _, l := range m.Layers {
		s.Layers = append(s.Layers, l.Size)
	}
	layers, err := img.Layers()
	if err != nil {
		return Size{}, fmt.Errorf("listing the image layers: %w", err)
	}
	if len(layers) == 0 {
		return s, nil
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		return Size{}, fmt.Errorf("reading the top layer: %w", err)
	}
	defer rc.Close()
	if s.TopUncompressed, err = io.Copy(io.Discard, rc); err != nil {
		return Size{}, fmt.Errorf("reading the top layer: %w", err)
	}
	return s, nil
}
