package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PullBase resolves the runtime base (the lock's runtime image, or --runtime-image) for
// one platform: an index (distroless is multi-platform) resolves to that platform's
// image. Pass the same ref to WithBaseRef so the annotations name what was asked for
// (the pinned index digest), not the per-platform manifest. Layers are fetched lazily,
// when the image is written.
func PullBase(ctx context.Context, ref string, platform v1.Platform, opts ...PublishOption) (v1.Image, error) {
	o := newPublishOptions(opts)
	var nopts []name.Option
	if o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("parsing runtime image reference %q: %w", ref, err)
	}
	img, err := remote.Image(r, append(o.remoteOptions(ctx), remote.WithPlatform(platform))...)
	if err != nil {
		return nil, fmt.Errorf("pulling runtime image %s for %s: %w", r, platform.String(), err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading runtime image %s config: %w", r, err)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		return nil, fmt.Errorf("runtime image %s is %s/%s, want %s", r, cf.OS, cf.Architecture, platform.String())
	}
	return img, nil
}
