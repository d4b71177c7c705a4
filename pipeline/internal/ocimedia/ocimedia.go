// Package ocimedia gives an image OCI media types throughout without touching its blobs:
// what pipeline/image needs to assemble on a Docker-typed base, and pipeline/ocirun to hand
// any image to umoci. A leaf, so that the runner does not import the image builder.
package ocimedia

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ToOCI returns img with OCI media types on its manifest, config and every layer. The
// blobs are untouched: the same config bytes, the same layer digests and sizes, and every
// other field of the manifest (annotations, subject, a layer's annotations and URLs) as it
// was; only the descriptors' media types change. An image that is OCI throughout is
// returned as it is, so its digest does not move.
//
// Two callers need it. pipeline/image's Assemble, because the image it writes uses OCI-only features
// (manifest annotations, the SBOM referrer's subject, the OCI layout of --output) and so
// must be OCI throughout, also on a base with Docker schema 2 media types, as many images
// are: an OCI manifest listing Docker-typed layers is inconsistent, and umoci refuses it
// ("blob is not correct mediatype"). And pipeline/ocirun, because umoci unpacks only OCI
// images, while `docker build`, BuildKit's default output and images pushed by earlier
// versions of this tool (an OCI manifest holding the base's Docker-typed layers) are not.
func ToOCI(img v1.Image) (v1.Image, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, fmt.Errorf("reading the image's media type: %w", err)
	}
	if mt != types.OCIManifestSchema1 && mt != types.DockerManifestSchema2 {
		return nil, fmt.Errorf("image manifest of media type %s: only OCI and Docker schema 2 image manifests are supported (push the image again with a current Docker, BuildKit or crane)", mt)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the image manifest: %w", err)
	}
	out := m.DeepCopy()
	out.MediaType = types.OCIManifestSchema1
	switch m.Config.MediaType {
	case types.OCIConfigJSON, types.DockerConfigJSON:
		out.Config.MediaType = types.OCIConfigJSON
	default:
		return nil, fmt.Errorf("image config of media type %s: not a container image config", m.Config.MediaType)
	}
	changed := out.MediaType != m.MediaType || out.Config.MediaType != m.Config.MediaType
	layerTypes := map[v1.Hash]types.MediaType{}
	for i, l := range m.Layers {
		oci, ok := ociLayerType[l.MediaType]
		if !ok {
			return nil, fmt.Errorf("layer %d (%s) has media type %s, which has no OCI equivalent this tool can run or publish", i, l.Digest, l.MediaType)
		}
		out.Layers[i].MediaType = oci
		layerTypes[l.Digest] = oci
		changed = changed || oci != l.MediaType
	}
	if !changed {
		return img, nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("writing the OCI manifest: %w", err)
	}
	digest, size, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return &ociImage{Image: img, manifest: out, raw: raw, digest: digest, size: size, layerTypes: layerTypes}, nil
}

// ociLayerType maps each layer media type to its OCI form. Docker's foreign layers
// (Windows base layers, fetched from URLs) are left out: a Linux nginx image has none,
// and umoci could not unpack them.
var ociLayerType = map[types.MediaType]types.MediaType{
	types.DockerLayer:                    types.OCILayer,
	types.DockerUncompressedLayer:        types.OCIUncompressedLayer,
	types.OCILayer:                       types.OCILayer,
	types.OCILayerZStd:                   types.OCILayerZStd,
	types.OCIUncompressedLayer:           types.OCIUncompressedLayer,
	types.OCIRestrictedLayer:             types.OCIRestrictedLayer,
	types.OCIUncompressedRestrictedLayer: types.OCIUncompressedRestrictedLayer,
}

// ociImage is img under a rewritten manifest. Config and layer blobs come from img
// unchanged; layers report their new media type, so anything that rebuilds descriptors
// from the layers (mutate.Append, remote.Write) agrees with the manifest.
type ociImage struct {
	v1.Image
	manifest   *v1.Manifest
	raw        []byte
	digest     v1.Hash
	size       int64
	layerTypes map[v1.Hash]types.MediaType
}

func (i *ociImage) MediaType() (types.MediaType, error) { return i.manifest.MediaType, nil }
func (i *ociImage) Manifest() (*v1.Manifest, error)     { return i.manifest.DeepCopy(), nil }
func (i *ociImage) RawManifest() ([]byte, error)        { return bytes.Clone(i.raw), nil }
func (i *ociImage) Digest() (v1.Hash, error)            { return i.digest, nil }
func (i *ociImage) Size() (int64, error)                { return i.size, nil }

func (i *ociImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for n, l := range ls {
		if out[n], err = i.retype(l); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (i *ociImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return i.retype(l)
}

func (i *ociImage) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDiffID(h)
	if err != nil {
		return nil, err
	}
	return i.retype(l)
}

func (i *ociImage) retype(l v1.Layer) (v1.Layer, error) {
	d, err := l.Digest()
	if err != nil {
		return nil, err
	}
	mt, ok := i.layerTypes[d]
	if !ok {
		// Config blobs are served through LayerByDigest too; they keep their own type.
		return l, nil
	}
	return &ociLayer{Layer: l, mediaType: mt}, nil
}

// ociLayer is a layer with its blob unchanged and only its media type replaced.
// Embedding the v1.Layer interface (not the concrete layer) keeps a remote layer's own
// Descriptor method, which would report the old media type, from being promoted.
type ociLayer struct {
	v1.Layer
	mediaType types.MediaType
}

func (l *ociLayer) MediaType() (types.MediaType, error) { return l.mediaType, nil }
