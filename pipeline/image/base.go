package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// OCIPlatform is p as go-containerregistry names a platform: the one conversion, for the
// pulls and checks that take one (PullBase).
func OCIPlatform(p plan.Platform) v1.Platform { return v1.Platform{OS: p.OS, Architecture: p.Arch} }

// PullBase resolves the runtime base (the lock's runtime image, or --runtime-image) for
// one platform, from a registry or a local file (ParseSource): an index (distroless is multi-platform) resolves to that platform's
// image. Pass the same ref to WithBaseRef so the annotations name what was asked for
// (the pinned index digest), not the per-platform manifest. Layers are fetched lazily,
// when the image is written.
func PullBase(ctx context.Context, ref string, platform v1.Platform, opts ...Option) (v1.Image, error) {
	o := makeOptions(opts)
	var nopts []name.Option
	if o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	src, err := ParseSource(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("runtime image: %w", err)
	}
	img, err := src.Image(ctx, &platform, o.remoteOptions(ctx)...)
	if err != nil {
		if src.Local() {
			return nil, fmt.Errorf("reading runtime image %s for %s: %w", src, platform.String(), err)
		}
		return nil, fmt.Errorf("pulling runtime image %s for %s: %w", src.Ref, platform.String(), err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading runtime image %s config: %w", src, err)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		return nil, fmt.Errorf("runtime image %s is %s/%s, want %s", src, cf.OS, cf.Architecture, platform.String())
	}
	return img, nil
}
