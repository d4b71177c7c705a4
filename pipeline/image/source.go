package image

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The spellings of an image that is a file on this machine, as skopeo and podman name
// them: what `ci build --output` writes (a layout directory, or a docker-archive tarball
// for a path ending in .tar) and what `ci base --output` writes can be read back.
const (
	// SchemeOCI is an OCI image layout directory: oci:DIR, or oci:DIR:TAG to pick the
	// image whose org.opencontainers.image.ref.name is TAG.
	SchemeOCI = "oci"
	// SchemeDockerArchive is a `docker save` tarball: docker-archive:FILE, or
	// docker-archive:FILE:REF to pick one image of several.
	SchemeDockerArchive = "docker-archive"
)

// SourceSpellings is how a flag's help names the accepted forms.
const SourceSpellings = "a registry reference, oci:DIR[:TAG] (an OCI layout) or docker-archive:FILE[:REF] (a docker save tarball)"

// Source is an image named by a flag (--runtime-image, ci smoke --image): in a registry,
// or a file on this machine. One parser, so every flag that takes an image takes the
// same spellings.
type Source struct {
	// Scheme is "" for a registry reference, else SchemeOCI or SchemeDockerArchive.
	Scheme string
	// Path and Tag name a local image (Tag may be empty: the only image there).
	Path, Tag string
	// Ref is the registry reference (Scheme "").
	Ref name.Reference
	raw string
}

// ParseSource parses s. A local path must exist: the fix for a typo is named before
// anything is fetched.
func ParseSource(s string, nopts ...name.Option) (Source, error) {
	for _, scheme := range []string{SchemeOCI, SchemeDockerArchive} {
		rest, ok := strings.CutPrefix(s, scheme+":")
		if !ok {
			continue
		}
		if rest == "" {
			return Source{}, fmt.Errorf("%q names no path: write %s:PATH", s, scheme)
		}
		src := Source{Scheme: scheme, Path: rest, raw: s}
		// A path may hold a colon itself, and a docker-archive's REF holds one: the path
		// is the longest prefix before a colon that exists.
		if _, err := os.Stat(rest); err != nil {
			for i := strings.LastIndex(rest, ":"); i > 0; i = strings.LastIndex(rest[:i], ":") {
				if _, err2 := os.Stat(rest[:i]); err2 == nil {
					src.Path, src.Tag = rest[:i], rest[i+1:]
					return src, nil
				}
			}
			return Source{}, fmt.Errorf("%s: %w (a local image: %s)", s, err, SourceSpellings)
		}
		return src, nil
	}
	r, err := name.ParseReference(s, nopts...)
	if err != nil {
		return Source{}, fmt.Errorf("parsing reference %q: %w (images are %s)", s, err, SourceSpellings)
	}
	return Source{Ref: r, raw: s}, nil
}

// IsLocal reports whether the source names a file on this machine.
func IsLocal(s string) bool {
	return strings.HasPrefix(s, SchemeOCI+":") || strings.HasPrefix(s, SchemeDockerArchive+":")
}

// Local reports whether src is a file on this machine.
func (src Source) Local() bool { return src.Scheme != "" }

func (src Source) String() string { return src.raw }

// Image reads the image; for a registry reference or a layout holding an index,
// platform picks the image (nil: the reference must name a single image).
func (src Source) Image(ctx context.Context, platform *v1.Platform, ropts ...remote.Option) (v1.Image, error) {
	switch src.Scheme {
	case "":
		if platform != nil {
			ropts = append(ropts, remote.WithPlatform(*platform))
		}
		return remote.Image(src.Ref, ropts...)
	case SchemeDockerArchive:
		var tag *name.Tag
		if src.Tag != "" {
			t, err := name.NewTag(src.Tag)
			if err != nil {
				return nil, fmt.Errorf("%s: tag %q: %w", src.raw, src.Tag, err)
			}
			tag = &t
		}
		img, err := tarball.ImageFromPath(src.Path, tag)
		if err != nil {
			return nil, fmt.Errorf("reading docker-archive %s: %w", src.Path, err)
		}
		return img, nil
	default:
		return src.layoutImage(platform)
	}
}

// layoutImage picks the image of an OCI layout: the one whose ref.name is Tag (or ends in
// ":"+Tag), else the only image; an index entry resolves to platform's image.
func (src Source) layoutImage(platform *v1.Platform) (v1.Image, error) {
	p, err := layout.FromPath(src.Path)
	if err != nil {
		return nil, fmt.Errorf("reading OCI layout %s: %w", src.Path, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading OCI layout %s: %w", src.Path, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading OCI layout %s index.json: %w", src.Path, err)
	}
	var picked []v1.Descriptor
	var names []string
	for _, d := range m.Manifests {
		if !d.MediaType.IsImage() && !d.MediaType.IsIndex() {
			continue // the SBOM artifact ci build --output writes beside the image
		}
		if d.ArtifactType != "" && d.ArtifactType != string(types.OCIConfigJSON) && d.ArtifactType != string(types.DockerConfigJSON) {
			continue // an artifact (its type is not an image config's)
		}
		n := d.Annotations["org.opencontainers.image.ref.name"]
		names = append(names, n)
		if src.Tag == "" || n == src.Tag || strings.HasSuffix(n, ":"+src.Tag) {
			picked = append(picked, d)
		}
	}
	switch {
	case len(picked) == 0 && src.Tag != "":
		return nil, fmt.Errorf("OCI layout %s has no image tagged %q (it has %s)", src.Path, src.Tag, quoteList(names))
	case len(picked) == 0:
		return nil, fmt.Errorf("OCI layout %s holds no image", src.Path)
	case len(picked) > 1:
		return nil, fmt.Errorf("OCI layout %s holds %d images (%s): name one as oci:%s:TAG", src.Path, len(picked), quoteList(names), src.Path)
	}
	d := picked[0]
	if d.MediaType.IsImage() {
		return idx.Image(d.Digest)
	}
	child, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the index %s in OCI layout %s: %w", d.Digest, src.Path, err)
	}
	cm, err := child.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, c := range cm.Manifests {
		if platform == nil || (c.Platform != nil && c.Platform.Satisfies(*platform)) {
			return child.Image(c.Digest)
		}
	}
	want := "one platform"
	if platform != nil {
		want = platform.String()
	}
	return nil, fmt.Errorf("OCI layout %s: the index %s has no image for %s", src.Path, d.Digest, want)
}

func quoteList(names []string) string {
	if len(names) == 0 {
		return "none named"
	}
	q := make([]string, len(names))
	for i, n := range names {
		if n == "" {
			n = "(untagged)"
		}
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
