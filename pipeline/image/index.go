package image

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BuildIndex makes a multi-platform OCI index from per-platform image digests (each
// "REPO@sha256:...", as pushed by each architecture's runner). Each entry's platform is
// read from that image's config, entries are sorted by platform so the index digest does
// not depend on argument order, and two images of the same platform are refused. Only
// reads the registry.
func BuildIndex(ctx context.Context, digestRefs []string, opts ...Option) (v1.ImageIndex, error) {
	if len(digestRefs) == 0 {
		return nil, fmt.Errorf("building index: no per-platform digests given")
	}
	o := makeOptions(opts)
	ropts := o.remoteOptions(ctx)
	var nopts []name.Option
	if o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	type entry struct {
		platform v1.Platform
		add      mutate.IndexAddendum
	}
	var entries []entry
	seen := map[string]string{}
	for _, s := range digestRefs {
		ref, err := name.NewDigest(s, nopts...)
		if err != nil {
			return nil, fmt.Errorf("parsing per-platform image %q (want REPO@sha256:...): %w", s, err)
		}
		desc, err := remote.Get(ref, ropts...)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", ref, err)
		}
		if desc.MediaType.IsIndex() {
			return nil, fmt.Errorf("%s is an index, not a single-platform image; give the per-platform digests", ref)
		}
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("reading image %s: %w", ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("reading config of %s: %w", ref, err)
		}
		p := cf.Platform()
		if p == nil || p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("image %s has no os/architecture in its config", ref)
		}
		key := p.String()
		if other, dup := seen[key]; dup {
			return nil, fmt.Errorf("images %s and %s are both %s; give one image per platform", other, ref, key)
		}
		seen[key] = ref.String()
		entries = append(entries, entry{*p, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: desc.MediaType, Platform: p},
		}})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].platform.String() < entries[j].platform.String() })
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, e := range entries {
		idx = mutate.AppendManifests(idx, e.add)
	}
	return idx, nil
}

// publishIndex publishes an index like Publish publishes an image: by digest first (the
// per-platform images must already be in repo, or are copied there), then the verify
// function, then the tags.
func publishIndex(ctx context.Context, idx v1.ImageIndex, repo string, tags []string, opts ...Option) (*Published, error) {
	o := makeOptions(opts)
	if o.sbom != nil {
		return nil, fmt.Errorf("publishing index: SBOMs are attached to the per-platform images, not the index")
	}
	return publish(ctx, idx, repo, tags, o, func(ref name.Digest, ropts []remote.Option) error {
		return remote.WriteIndex(ref, idx, ropts...)
	})
}

// Index builds the index from per-platform digests and publishes it under tags.
func Index(ctx context.Context, repo string, digestRefs []string, tags []string, opts ...Option) (*Published, error) {
	idx, err := BuildIndex(ctx, digestRefs, opts...)
	if err != nil {
		return nil, &PublishError{Step: StepPrepare, Err: err}
	}
	return publishIndex(ctx, idx, repo, tags, opts...)
}
