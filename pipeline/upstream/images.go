package upstream

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ImageResolver finds the digest a base image tag points at now.
type ImageResolver struct {
	registry  string
	transport http.RoundTripper
	keychain  authn.Keychain
}

// ImageOption configures an ImageResolver.
type ImageOption func(*ImageResolver)

// WithRegistry sends every lookup to this registry host (e.g. "127.0.0.1:5000") instead of
// the one in the reference, keeping the repository path and tag: tests serve the base images
// from a loopback registry. Plain HTTP is allowed for it.
func WithRegistry(host string) ImageOption { return func(r *ImageResolver) { r.registry = host } }

// WithTransport replaces the HTTP transport of registry requests.
func WithTransport(t http.RoundTripper) ImageOption {
	return func(r *ImageResolver) { r.transport = t }
}

// WithKeychain sets the credentials source (default: authn.DefaultKeychain, i.e. the docker
// config; the public base images need none).
func WithKeychain(k authn.Keychain) ImageOption { return func(r *ImageResolver) { r.keychain = k } }

// NewImageResolver returns a resolver.
func NewImageResolver(opts ...ImageOption) *ImageResolver {
	r := &ImageResolver{transport: remote.DefaultTransport, keychain: authn.DefaultKeychain}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Digest returns the digest of the manifest (for a multi-platform image, the index) that ref
// names now, by a HEAD request, which does not count against Docker Hub's pull limit.
func (r *ImageResolver) Digest(ctx context.Context, ref string) (string, error) {
	// A ref that also carries a digest ("ubuntu:24.04@sha256:...") is followed by its tag:
	// finding out where the tag points now is the whole point.
	tagOnly := ref
	if at := strings.Index(tagOnly, "@"); at >= 0 {
		tagOnly = tagOnly[:at]
	}
	parsed, err := name.ParseReference(tagOnly)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	tag, ok := parsed.(name.Tag)
	if !ok {
		return "", fmt.Errorf("image reference %q has no tag to follow (the lock's ref must be a tag; the digest goes in its digest field)", ref)
	}
	if r.registry != "" {
		tag, err = name.NewTag(r.registry+"/"+tag.RepositoryStr()+":"+tag.TagStr(), name.Insecure)
		if err != nil {
			return "", fmt.Errorf("image reference %q on registry %q: %w", ref, r.registry, err)
		}
	}
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithTransport(r.transport), remote.WithAuthFromKeychain(r.keychain))
	if err != nil {
		return "", fmt.Errorf("looking up image %q: %w", tag.String(), err)
	}
	return desc.Digest.String(), nil
}
