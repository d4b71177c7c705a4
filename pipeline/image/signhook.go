package image

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// SignFunc signs exactly ref (pipeline/sign) after it is verified and its SBOM attached, and
// before any tag moves; ropts are the publish's registry options (credentials, transport), so
// the signature goes where the image went. A non-nil error stops the publish at step "sign"
// with every tag where it was.
type SignFunc func(ctx context.Context, ref name.Digest, ropts []remote.Option) error

// WithSign makes Publish and Index sign what they push (see SignFunc).
func WithSign(f SignFunc) Option { return func(o *options) { o.sign = f } }
