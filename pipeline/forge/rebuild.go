package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
)

// Rebuild is a request to build a published image again from what its signed provenance
// records and to compare the digests (ci rebuild).
type Rebuild struct {
	// Ref is the image to rebuild, by digest: one platform's image, as ci build --push
	// pushes and attests each.
	Ref name.Digest
	// Key is the PEM public key file that verifies the provenance's signature (cosign.pub).
	Key string
	// SignKey, when set, is the private key file that attests a rebuild that matched
	// (sign.AttestRebuild), in the formats Request.SignKey takes.
	SignKey string
	// Verifier ID names who rebuilt, in the rebuild attestation ("" is this program).
	VerifierID string
	// Build is what the rebuild builds with that the provenance does not record: the lock
	// file, the mirror, the cache, the runtime image override, the registry options. Its
	// platform, CPU, optimization, modules, revision and origin are the provenance's.
	Build Request
}

// RebuildResult is what a rebuild found.
type RebuildResult struct {
	// Recorded is the verified provenance.
	Recorded sign.Recorded
	// Rebuilt is the digest the rebuild gave; Matched says whether it is Ref's.
	Rebuilt string
	Matched bool
	// Difference is where the images first differ when they do not match.
	Difference image.Difference
	// Attestation is the rebuild attestation's manifest when one was attached.
	Attestation *name.Digest
	// Build is the rebuild's own result (its steps and stages).
	Build *Result
}

// RebuildPredicateType and RebuildMatched are what a rebuild attestation states: SLSA's
// verification summary, with this level when the digests matched.
const (
	RebuildPredicateType = sign.PredicateVerificationSummary
	RebuildMatched       = sign.RebuildMatched
)

// ErrRebuildDiffers: the rebuild gave another digest (RebuildResult.Difference says where).
var ErrRebuildDiffers = errors.New("the rebuild gave another digest")

// ReadRebuildProvenance reads and verifies the provenance attached to x.Ref, refusing an
// index (its platforms' images carry their own) and a provenance of several platforms.
// Nothing is built; ci reads it first to choose the engine the provenance names.
func ReadRebuildProvenance(ctx context.Context, x Rebuild, opts ...image.Option) (sign.Recorded, error) {
	verifier, err := sign.LoadPublicKey("--key", x.Key)
	if err != nil {
		return sign.Recorded{}, &RequestError{Err: err}
	}
	if x.SignKey != "" {
		// A key that cannot sign fails now, not after the rebuild.
		if _, err := sign.LoadKey(x.SignKey); err != nil {
			return sign.Recorded{}, &RequestError{Err: err}
		}
	}
	ropts := image.RemoteOptions(ctx, opts...)
	desc, err := remote.Head(x.Ref, ropts...)
	if err != nil {
		return sign.Recorded{}, fmt.Errorf("reading %s: %w", x.Ref, err)
	}
	if desc.MediaType.IsIndex() {
		return sign.Recorded{}, &RequestError{Err: fmt.Errorf("%s is an index of platform images: rebuild each platform's image (its digest in the index: crane manifest %s), whose provenance says how it was built", x.Ref, x.Ref)}
	}
	rec, err := sign.ReadProvenance(ctx, x.Ref, verifier, ropts...)
	if errors.Is(err, sign.ErrNoProvenance) {
		return sign.Recorded{}, &RequestError{Err: fmt.Errorf("%w: rebuild needs the provenance ci build --push --sign-key attaches, signed by the key whose public half is given", err)}
	}
	if err != nil {
		return sign.Recorded{}, err
	}
	if len(rec.Platforms) != 1 {
		return sign.Recorded{}, &RequestError{Err: fmt.Errorf("the provenance of %s records %d platforms; an image's records one", x.Ref, len(rec.Platforms))}
	}
	return rec, nil
}

// RunRebuild builds rec's build again on eng (which it closes) and compares the digest with
// x.Ref's: the lock and flags are checked against the provenance before anything is fetched
// (a *RequestError names the first field that differs). On a match with a Signer, it attests
// the rebuild. A mismatch returns ErrRebuildDiffers with the first difference in the result.
func RunRebuild(ctx context.Context, eng engine.Engine, x Rebuild, rec sign.Recorded, opts ...Option) (*RebuildResult, error) {
	res := &RebuildResult{Recorded: rec}
	scratch, err := os.MkdirTemp("", "nginx-forge-rebuild-")
	if err != nil {
		eng.Close()
		return res, err
	}
	defer os.RemoveAll(scratch)
	rs, err := x.resolve(rec, eng.Name(), filepath.Join(scratch, "image"))
	if err != nil {
		eng.Close() // Run closes it otherwise
		return res, err
	}
	build, err := Run(ctx, eng, rs, opts...)
	res.Build = build
	if err != nil {
		return res, err
	}
	if len(build.Platforms) != 1 || build.Platforms[0].Digest == "" {
		return res, fmt.Errorf("the rebuild of %s assembled no image", x.Ref)
	}
	res.Rebuilt = build.Platforms[0].Digest
	res.Matched = res.Rebuilt == x.Ref.DigestStr()
	req := rs.Request()
	o := makeOptions(opts)
	regOpts := registryOptions(o.sink, req.Insecure, req.RegistryTimeout)
	if !res.Matched {
		return res, x.compare(ctx, res, req.Output, regOpts)
	}
	if x.SignKey != "" {
		signer, err := sign.LoadKey(x.SignKey)
		if err != nil {
			return res, err
		}
		att, err := sign.AttestRebuild(ctx, x.Ref, signer, sign.Rebuild{
			Verifier: x.VerifierID, Engine: eng.Name(), Provenance: rec.Attestation, Time: time.Now(),
		}, image.RemoteOptions(ctx, regOpts...)...)
		if err != nil {
			return res, fmt.Errorf("the rebuild matched, but attesting it failed: %w", err)
		}
		res.Attestation = &att // the command says so
	}
	return res, nil
}

// resolve is the rebuild's request resolved, and refused (a *RequestError, nothing fetched
// or built) when this checkout's lock cannot make the recorded build or makes another one on
// engineName.
func (x Rebuild) resolve(rec sign.Recorded, engineName, output string) (*Resolved, error) {
	req, err := x.request(rec, output)
	var rs *Resolved
	if err == nil {
		rs, err = req.Resolve()
	}
	if err != nil {
		return nil, &RequestError{Err: fmt.Errorf("refusing to rebuild %s with this checkout's lock and the recorded flags (nothing was fetched or built): %w", x.Ref, err)}
	}
	want, err := rs.Provenance(engineName)
	if err != nil {
		return nil, err
	}
	if err := rec.Check(want); err != nil {
		return nil, &RequestError{Err: fmt.Errorf("refusing to rebuild %s (nothing was fetched or built): %w", x.Ref, err)}
	}
	return rs, nil
}

// request is the build rec records, with what x adds (the lock file, the mirror, the
// cache, the images), written as an OCI layout to output and neither smoke-tested nor pushed.
// The recorded platform is read here, where it enters from the provenance.
func (x Rebuild) request(rec sign.Recorded, output string) (Request, error) {
	p := rec.Platforms[0]
	req := x.Build
	pl, err := plan.ParsePlatform(p.Platform)
	if err != nil {
		return Request{}, fmt.Errorf("the provenance records the platform %w", err)
	}
	req.Platforms = []plan.Platform{pl}
	req.CPU, req.Optimize, req.Modules = p.CPU, p.Optimize, p.Modules
	if req.Modules == nil {
		req.Modules = []string{} // the recorded set, even when empty; nil would be the default set
	}
	req.Revision = rec.Origin.Revision
	req.Origin = Origin{Repository: rec.Origin.Repository, Ref: rec.Origin.Ref, BuilderID: rec.Origin.BuilderID}
	req.Push, req.NoSmoke, req.Repo, req.Tags, req.Tree, req.Output = false, true, "", nil, "", output
	return req, nil
}

// compare finds where the published image and the rebuild (in the layout at output) first
// differ, and returns ErrRebuildDiffers saying so.
func (x Rebuild) compare(ctx context.Context, res *RebuildResult, output string, regOpts []image.Option) error {
	published, err := remote.Image(x.Ref, image.RemoteOptions(ctx, regOpts...)...)
	if err != nil {
		return fmt.Errorf("%w (%s); reading the published image to compare: %w", ErrRebuildDiffers, res.Rebuilt, err)
	}
	rebuilt, err := layoutImage(output, res.Rebuilt)
	if err != nil {
		return fmt.Errorf("%w (%s); reading the rebuilt image to compare: %w", ErrRebuildDiffers, res.Rebuilt, err)
	}
	d, differ, err := image.FirstDifference(published, rebuilt)
	if err != nil {
		return fmt.Errorf("%w (%s); comparing them: %w", ErrRebuildDiffers, res.Rebuilt, err)
	}
	if !differ {
		d.Field = "the manifest (the layers and the config are the same)"
	}
	res.Difference = d
	return fmt.Errorf("%w: %s, not %s: %s", ErrRebuildDiffers, res.Rebuilt, x.Ref.DigestStr(), d)
}

// layoutImage is the image of digest in the OCI layout at dir (what Request.Output wrote).
func layoutImage(dir, digest string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, err
	}
	return p.Image(h)
}
