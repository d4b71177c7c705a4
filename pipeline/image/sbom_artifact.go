package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SBOM storage, the choice: the SBOM is an OCI referrer artifact, an image manifest with
// artifactType application/spdx+json, one layer (the SPDX JSON document), the empty config
// descriptor, and subject = the image's manifest. Reasons: the image's own digest stays
// independent of the SBOM (so the SBOM can name the image's digest, and signing/attesting
// tools that expect referrers find it: `oras discover`, `crane` with the referrers API,
// cosign's tree); and it is the OCI 1.1 way, which registries without the referrers API
// (distribution 2.8, Debian's docker-registry) still serve through the tag-schema fallback
// ("sha256-<hex of the image digest>" naming an index of referrers; go-containerregistry
// maintains it). An annotation-linked blob was rejected: a blob no manifest references is
// garbage-collected by registries, and an annotation pointing at it would have to be in the
// image manifest, tying the image digest to the SBOM.
//
// In an OCI layout (--output) the artifact is stored as a second manifest in index.json,
// and the document is also written beside the layout as DIR.spdx.json for people.
const (
	sbomArtifactType = "application/spdx+json"
	// sbomMediaType is the layer media type of the SPDX JSON document.
	sbomMediaType types.MediaType = "application/spdx+json"
	// emptyConfigMediaType and emptyConfig are OCI 1.1's empty descriptor for artifacts.
	emptyConfigMediaType types.MediaType = "application/vnd.oci.empty.v1+json"
)

var emptyConfig = []byte("{}")

// sbomArtifact returns the referrer manifest carrying sbom for subject (see the SBOM
// storage note above). It is a v1.Image so that remote.Write and layout.AppendImage
// handle it like any image; go-containerregistry updates the referrers fallback tag when
// the registry lacks the referrers API.
func sbomArtifact(subject v1.Image, sbom []byte, created time.Time) (v1.Image, error) {
	d, err := subject.Digest()
	if err != nil {
		return nil, err
	}
	size, err := subject.Size()
	if err != nil {
		return nil, err
	}
	mt, err := subject.MediaType()
	if err != nil {
		return nil, err
	}
	layer := static.NewLayer(sbom, sbomMediaType)
	ld, _ := layer.Digest()
	cd, cs, _ := v1.SHA256(bytes.NewReader(emptyConfig))
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  sbomArtifactType,
		Config: v1.Descriptor{
			MediaType: emptyConfigMediaType,
			Digest:    cd,
			Size:      cs,
			Data:      emptyConfig,
		},
		Layers: []v1.Descriptor{{
			MediaType:   sbomMediaType,
			Digest:      ld,
			Size:        int64(len(sbom)),
			Annotations: map[string]string{"org.opencontainers.image.title": "sbom.spdx.json"},
		}},
		Subject: &v1.Descriptor{MediaType: mt, Digest: d, Size: size},
		Annotations: map[string]string{
			annotationCreated: created.UTC().Format(time.RFC3339),
		},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&artifact{raw: raw, layer: layer, configDigest: cd})
}

// artifact is a manifest whose config is OCI's empty descriptor: partial fills in the
// rest of v1.Image from these four methods.
type artifact struct {
	raw          []byte
	layer        v1.Layer
	configDigest v1.Hash
}

func (a *artifact) RawConfigFile() ([]byte, error)      { return emptyConfig, nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.raw, nil }
func (a *artifact) ConfigLayer() (v1.Layer, error) {
	return static.NewLayer(emptyConfig, emptyConfigMediaType), nil
}
func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, _ := a.layer.Digest(); d == h {
		return a.layer, nil
	}
	if h == a.configDigest {
		return static.NewLayer(emptyConfig, emptyConfigMediaType), nil
	}
	return nil, fmt.Errorf("SBOM artifact has no blob %s", h)
}

// readSBOM returns the SPDX document inside an artifact made by sbomArtifact.
func readSBOM(art v1.Image) ([]byte, error) {
	m, err := art.Manifest()
	if err != nil {
		return nil, err
	}
	if m.ArtifactType != sbomArtifactType || len(m.Layers) != 1 {
		return nil, fmt.Errorf("manifest is not an SPDX SBOM artifact (artifactType %q, %d layers)", m.ArtifactType, len(m.Layers))
	}
	l, err := art.LayerByDigest(m.Layers[0].Digest)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(rc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// AttachedSBOM returns the SPDX document Publish attached to the image at ref
// (REPO@sha256:..., pushed with WithSBOM): its one referrer of artifactType
// application/spdx+json, found through the registry's referrers API or, on a registry
// without one, the fallback tag sha256-<hex> it was pushed under. `ci manifest --sign-key`
// attests each platform's document with the index it assembles, as `ci build --push
// --sign-key` attests the ones it built. Only reads the registry.
func AttachedSBOM(ctx context.Context, ref string, opts ...Option) ([]byte, error) {
	o := makeOptions(opts)
	ropts := o.remoteOptions(ctx)
	var nopts []name.Option
	if o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	d, err := name.NewDigest(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("the SBOM of %q (want REPO@sha256:...): %w", ref, err)
	}
	idx, err := remote.Referrers(d, append(ropts, remote.WithFilter("artifactType", sbomArtifactType))...)
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s for its SBOM: %w", d, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s for its SBOM: %w", d, err)
	}
	var found []v1.Descriptor
	for _, desc := range m.Manifests {
		// The fallback tag's index is not filtered by the registry: filter here too.
		if desc.ArtifactType == sbomArtifactType {
			found = append(found, desc)
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("%s has no SBOM attached (no referrer of artifactType %s): push it with `ci build --push`, which attaches each image's SBOM", d, sbomArtifactType)
	case len(found) > 1:
		var ds []string
		for _, f := range found {
			ds = append(ds, f.Digest.String())
		}
		return nil, fmt.Errorf("%s has %d SBOMs attached (%s), not one: which one describes it is not decided here; remove the ones its build did not attach", d, len(found), strings.Join(ds, ", "))
	}
	art, err := remote.Image(d.Context().Digest(found[0].Digest.String()), ropts...)
	if err != nil {
		return nil, fmt.Errorf("reading the SBOM %s of %s: %w", found[0].Digest, d, err)
	}
	doc, err := readSBOM(art)
	if err != nil {
		return nil, fmt.Errorf("reading the SBOM %s of %s: %w", found[0].Digest, d, err)
	}
	return doc, nil
}
