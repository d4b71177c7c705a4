// Package forge owns one build from request to result: it resolves the lock and the images,
// runs the preflight checks, fetches and verifies the sources, builds each platform on the
// engine it is given, assembles the image and its SBOM, smoke-tests it, writes the outputs
// and publishes. `ci build` turns flags into a Request, resolves it (Request.Resolve: every rule,
// once), chooses the engine and renders what Run reports; nothing else decides what a build does.
//
// The order is the safety: nothing is fetched before the preflight passes, nothing is
// written (--output) or published before the smoke test passes, and no tag moves unless
// every step before it succeeded.
package forge

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// Option configures Run: how it reports and what it asks the caller; none is a quiet build.
type Option func(*options)

type options struct {
	sink     progress.Sink
	warnings func(*lock.Lock) []string
}

// makeOptions applies opts over the defaults, here and nowhere else: no progress, no branch
// warnings.
func makeOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.sink == nil {
		o.sink = progress.Discard
	}
	if o.warnings == nil {
		o.warnings = func(*lock.Lock) []string { return nil }
	}
	return o
}

// WithProgress sends the build's progress to sink as typed events (pipeline/progress):
// steps, the engine's stages, pushes, tags, smoke results, and Notes (Info for a person,
// Warning, Detail for downloads, verification, registry steps and the smoke table). The
// command gives the engines the same Sink, so one -v shows everything.
func WithProgress(sink progress.Sink) Option { return func(o *options) { o.sink = sink } }

// WithBranchWarnings gives what every build warns about the lock's upstream branches
// (superseded, past their support): the command passes pipeline/upstream's calendar, which
// this package does not import.
func WithBranchWarnings(f func(*lock.Lock) []string) Option {
	return func(o *options) { o.warnings = f }
}

// build is one Run's state.
type build struct {
	req      Request
	l        *lock.Lock
	eng      engine.Engine
	targets  []*target
	sources  map[string]string
	res      *Result
	sink     progress.Sink
	warnings func(*lock.Lock) []string
	signer   signature.SignerVerifier // --sign-key's, loaded before anything is built
	regOpts  []image.Option           // every registry access's options (registryOptions)
}

// target is one platform's build: its plan, base, and (once built) its image.
type target struct {
	plan    *plan.Plan
	builder engine.Builder // what the engine compiles with (the preflight's)
	base    v1.Image
	img     v1.Image
	sbom    []byte
	res     *PlatformResult
	// toolchain are the builder's packages and versions the provenance records.
	toolchain []sign.NameVersion
}

// Run does the build rs resolved (Request.Resolve) on eng, which it closes. The Result says
// what was done, also when err is not nil (the steps that ran).
func Run(ctx context.Context, eng engine.Engine, rs *Resolved, opts ...Option) (*Result, error) {
	o := makeOptions(opts)
	defer eng.Close()
	if rs.req.Engine != "" && rs.req.Engine != eng.Name() {
		return &Result{}, &RequestError{Err: fmt.Errorf("the request was resolved for the %s engine, not %s (nothing was built)", rs.req.Engine, eng.Name())}
	}
	b := &build{req: rs.req, res: &Result{Repo: rs.req.Repo}, sink: o.sink, warnings: o.warnings, eng: engine.Checked(eng)}
	b.regOpts = registryOptions(b.sink, b.req.Insecure, b.req.RegistryTimeout)
	if b.req.SignKey != "" {
		// A key that cannot sign fails now, not after a build of several minutes, and
		// whatever is wrong with it (missing, not a file, not a key, no password) is the
		// input named on the command line: a *RequestError.
		var err error
		if b.signer, err = sign.LoadKey(b.req.SignKey); err != nil {
			return b.res, &RequestError{Err: fmt.Errorf("%w (nothing was built)", err)}
		}
	}
	b.start(rs)
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"preflight", b.preflight},
		{"fetch", b.fetch},
		{"build", b.buildAll},
		{"smoke", b.smokeAll},
		{"publish", b.publish},
	}
	for _, s := range steps {
		start := time.Now()
		err := s.run(ctx)
		b.res.Steps = append(b.res.Steps, Step{Name: s.name, Duration: time.Since(start)})
		if err != nil {
			return b.res, err
		}
	}
	return b.res, nil
}

// PreflightError is a build refused by its preflight: the engine cannot run here as asked
// (no Dagger engine, no runc or root for the smoke tests) or the runtime image does not fit
// the builder. Nothing was fetched or built; the message says which flag or install fixes it.
// A transient failure of the preflight (a registry that did not answer) is not one: running
// again may help, so it is returned as it is.
type PreflightError struct{ Err error }

func (e *PreflightError) Error() string { return e.Err.Error() }
func (e *PreflightError) Unwrap() error { return e.Err }

// preflight: what can fail without compiling fails now, before any download. On a cold
// Dagger engine it pulls the builder image, which takes a while: it is a step of the
// progress like the others.
func (b *build) preflight(ctx context.Context) error {
	b.stepStarted("preflight")
	start := time.Now()
	if err := b.preflightChecks(ctx); err != nil {
		b.sink.Send(progress.StepDone{Step: "preflight", Duration: time.Since(start), Failed: true})
		// A registry that went quiet is not fixed by a flag. (errors.As, as the registry
		// client joins its attempts in a type that Retryable cannot look into.)
		if errors.As(err, new(*image.StallError)) || netfail.Transient(err) {
			return err
		}
		return &PreflightError{Err: err}
	}
	b.stepDone("preflight", time.Since(start), progress.Built)
	return nil
}

func (b *build) preflightChecks(ctx context.Context) error {
	wants := b.req.WantsImage()
	// A cache another user could write is refused before anything is fetched: --cache
	// itself first (named as given), then the fetcher's directory in it (or its default).
	if b.req.CacheDir != "" {
		if err := safeio.CheckPrivateDir(b.req.CacheDir); err != nil {
			return fmt.Errorf("--cache: %w", err)
		}
	}
	if err := source.New(b.sourceOptions()...).Err(); err != nil {
		return err
	}
	if err := b.eng.Preflight(ctx, wants && !b.req.NoSmoke); err != nil {
		return err
	}
	if !wants {
		return nil
	}
	// The engine and its builder first, the runtime image after: a machine with no engine
	// and no registry in reach is told that it has no engine (and that --engine host builds
	// without one) before a pull of the base fails on the network.
	for _, t := range b.targets {
		var err error
		if t.builder, err = b.eng.Builder(ctx, t.plan); err != nil {
			return fmt.Errorf("checking the builder for %s (nothing was built): %w", t.plan.Platform, err)
		}
	}
	ref := b.runtimeRef()
	for _, t := range b.targets {
		if err := b.checkBase(ctx, t, ref, image.OCIPlatform(t.plan.Platform)); err != nil {
			return err
		}
	}
	return nil
}

// checkBase pulls the runtime image for t and checks its glibc against the builder's
// (t.builder): the binary needs the glibc symbol versions of the builder, and an older
// runtime glibc fails at start with "GLIBC_2.xx not found".
func (b *build) checkBase(ctx context.Context, t *target, ref string, pl v1.Platform) error {
	var err error
	if t.base, err = image.PullBase(ctx, ref, pl, b.regOpts...); err != nil {
		return fmt.Errorf("pulling the runtime image %s for %s (nothing was built; --runtime-image overrides it): %w", ref, t.plan.Platform, err)
	}
	baseV, err := image.GlibcVersion(t.base)
	if err != nil {
		return fmt.Errorf("reading the glibc version of the runtime image %s (nothing was built): %w", ref, err)
	}
	if err := image.CompareGlibc(t.builder.Glibc, baseV); err != nil {
		return fmt.Errorf("runtime image %s for %s (nothing was built): %w", ref, t.plan.Platform, err)
	}
	return nil
}

// runtimeRef is the runtime base: --runtime-image when it names a local file
// (image.ParseSource), else the lock's runtime image with any override applied.
func (b *build) runtimeRef() string {
	if image.IsLocal(b.req.RuntimeImage) {
		return b.req.RuntimeImage
	}
	return b.l.Images.Runtime.Pinned()
}
