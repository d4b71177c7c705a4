package image

import (
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/registryauth"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Option configures every function of this package that takes options, as
// go-containerregistry's remote.Option configures all of remote: each function reads the
// settings it is about (Assemble and SBOM the provenance, TreeLayer the layer, PullBase,
// Publish, BuildIndex and Index the registry) and ignores the rest, so a caller builds one
// list (forge's registryOptions) and hands it to every registry call.
type Option func(*options)

type options struct {
	// Provenance (Assemble, SBOM); resolve fills what the lock decides.
	epoch    *int64
	source   string
	revision string
	baseRef  string
	libcrypt string
	version  string
	optimize string
	profile  string
	modules  []string // WithModules; nil: the plan's default modules for the lock

	// The layer (TreeLayer).
	layer layerSpec

	// The registry (PullBase, Publish, BuildIndex, Index).
	verify      VerifyFunc
	sign        SignFunc
	sbom        []byte
	sbomCreated time.Time
	keychain    registryauth.Source
	sink        progress.Sink
	backoff     *remote.Backoff
	jobs        int // concurrent uploads; 0 is go-containerregistry's default
	stall       time.Duration
	insecure    bool
}

// makeOptions applies opts over the defaults, here and nowhere else: no source URL, the
// stall deadline, no progress, the one keychain (registryauth.Keychain).
func makeOptions(opts []Option) *options {
	o := &options{stall: DefaultStallTimeout, sink: progress.Discard}
	for _, opt := range opts {
		opt(o)
	}
	if o.keychain == nil {
		o.keychain = registryauth.Keychain()
	}
	if o.sink == nil {
		o.sink = progress.Discard
	}
	return o
}
