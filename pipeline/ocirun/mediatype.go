package ocirun

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// asOCI returns img with OCI media types on its manifest, config and layers, the only ones
// umoci unpacks ("descriptor does not point to ispec.MediaTypeImageManifest"). `docker
// build`, BuildKit's default image output and most of Docker Hub use Docker's schema 2
// types instead. The blobs stay the same (same layer digests, same config content); only
// the descriptors' media types change, so the rewritten image runs exactly what was pulled.
func asOCI(img v1.Image) (v1.Image, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, fmt.Errorf("reading the image's media type: %w", err)
	}
	switch mt {
	case types.OCIManifestSchema1:
		return img, nil
	case types.DockerManifestSchema2:
	default:
		return nil, fmt.Errorf("image manifest of media type %s: only OCI and Docker schema 2 image manifests can be run", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading image layers: %w", err)
	}
	out := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	out = mutate.ConfigMediaType(out, types.OCIConfigJSON)
	for i, l := range layers {
		lmt, err := l.MediaType()
		if err != nil {
			return nil, fmt.Errorf("reading the media type of layer %d: %w", i, err)
		}
		var oci types.MediaType
		switch lmt {
		case types.DockerLayer, types.OCILayer:
			oci = types.OCILayer
		case types.DockerUncompressedLayer, types.OCIUncompressedLayer:
			oci = types.OCIUncompressedLayer
		case types.OCILayerZStd:
			oci = types.OCILayerZStd
		default:
			return nil, fmt.Errorf("layer %d has media type %s, which cannot be unpacked", i, lmt)
		}
		if out, err = mutate.Append(out, mutate.Addendum{Layer: l, MediaType: oci}); err != nil {
			return nil, err
		}
	}
	// The original config, whole: its diff IDs, history, user and entrypoint.
	return mutate.ConfigFile(out, cf)
}
