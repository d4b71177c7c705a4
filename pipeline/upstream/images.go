package upstream

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/registryauth"
)

// ImageResolver finds the digest a base image tag points at now.
type ImageResolver struct {
	registry  string
	transport http.RoundTripper
	keychain  registryauth.Source
}

// ImageOption configures an ImageResolver.
type ImageOption func(*ImageResolver)

// withRegistry sends every lookup to this registry host (e.g. "127.0.0.1:5000") instead of
// the one in the reference, keeping the repository path and tag: tests serve the base images
// from a loopback registry. Plain HTTP is allowed for it.
func withRegistry(host string) ImageOption { return func(r *ImageResolver) { r.registry = host } }

// NewImageResolver returns a resolver.
func NewImageResolver(opts ...ImageOption) *ImageResolver {
	r := &ImageResolver{transport: remote.DefaultTransport, keychain: registryauth.Keychain()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// ref returns the tag ref names, on the resolver's registry when one is set.
func (r *ImageResolver) tag(ref string) (name.Tag, error) {
	// A ref that also carries a digest ("ubuntu:24.04@sha256:...") is followed by its tag:
	// finding out where the tag points now is the whole point.
	tagOnly := ref
	if at := strings.Index(tagOnly, "@"); at >= 0 {
		tagOnly = tagOnly[:at]
	}
	parsed, err := name.ParseReference(tagOnly)
	if err != nil {
		return name.Tag{}, fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	tag, ok := parsed.(name.Tag)
	if !ok {
		return name.Tag{}, fmt.Errorf("image reference %q has no tag to follow (the lock's ref must be a tag; the digest goes in its digest field)", ref)
	}
	if r.registry != "" {
		tag, err = name.NewTag(r.registry+"/"+tag.RepositoryStr()+":"+tag.TagStr(), name.Insecure)
		if err != nil {
			return name.Tag{}, fmt.Errorf("image reference %q on registry %q: %w", ref, r.registry, err)
		}
	}
	return tag, nil
}

// IndexPlatforms reads the manifest digest names in ref's repository and returns the
// platforms it covers ("linux/amd64", "linux/arm64/v8", ...). It refuses a digest that is a
// single-platform manifest rather than an index, and an index that lacks one of want (os/arch,
// any variant): the lock pins one digest for every platform the build targets. This is a GET
// (which Docker Hub counts as a pull), so it is done only for a digest that moved.
func (r *ImageResolver) IndexPlatforms(ctx context.Context, ref, digest string, want []string) ([]string, error) {
	tag, err := r.tag(ref)
	if err != nil {
		return nil, err
	}
	d := tag.Context().Digest(digest)
	if _, err := v1.NewHash(digest); err != nil {
		return nil, fmt.Errorf("image %s: digest %q: %w", ref, digest, err)
	}
	desc, err := remote.Get(d, remote.WithContext(ctx), remote.WithTransport(r.transport), remote.WithAuthFromKeychain(r.keychain), remote.WithRetryPredicate(netfail.Transient))
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", d.String(), err)
	}
	if !desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("image %s (%s) is a single-platform manifest (%s), not an index: the build targets %s and the lock pins one digest for all of them; "+
			"follow a multi-platform tag in the lock's ref (%w)", ref, digest, desc.MediaType, strings.Join(want, " and "), errPlatforms)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading index %s: %w", d.String(), err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading index %s: %w", d.String(), err)
	}
	have := map[string]bool{}
	var plats []string
	for _, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS == "unknown" {
			continue // attestation manifests (BuildKit's provenance) are no platform
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		have[p] = true
		full := p
		if m.Platform.Variant != "" {
			full += "/" + m.Platform.Variant
		}
		plats = append(plats, full)
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("image %s (index %s) has no %s manifest (it covers %s): the build targets %s; "+
			"keep the locked digest until the tag covers every platform, or follow another tag (%w)",
			ref, digest, strings.Join(missing, " or "), orNothing(plats), strings.Join(want, " and "), errPlatforms)
	}
	return plats, nil
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "no platform"
	}
	return strings.Join(s, ", ")
}

// Digest returns the digest of the manifest (for a multi-platform image, the index) that ref
// names now, by a HEAD request, which does not count against Docker Hub's pull limit.
func (r *ImageResolver) Digest(ctx context.Context, ref string) (string, error) {
	tag, err := r.tag(ref)
	if err != nil {
		return "", err
	}
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithTransport(r.transport), remote.WithAuthFromKeychain(r.keychain), remote.WithRetryPredicate(netfail.Transient))
	if err != nil {
		return "", fmt.Errorf("looking up image %q: %w", tag.String(), err)
	}
	return desc.Digest.String(), nil
}
