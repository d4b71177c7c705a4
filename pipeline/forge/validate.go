package forge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// RequestError is a request refused before anything runs: a combination of options that
// makes no sense, an output path a build could not write, a lock that does not load or
// cannot build what was asked. The message names the option and the fix; the command
// reports it as a usage error (exit status 2).
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Resolved is a validated request, resolved once for Run: its lock (a copy, with the image
// overrides applied), one plan per platform, and whether the lock is the one built into the
// program. Only Resolve makes one.
type Resolved struct {
	req     Request
	lock    *lock.Lock
	plans   []*plan.Plan
	builtin bool
	// advisories affect the lock's pinned versions (pipeline/advisory), reported by Run first.
	advisories []advisory.Finding
}

// Request is the request as it was resolved.
func (rs *Resolved) Request() Request { return rs.req }

// Resolve checks every rule of the request, once, here: option combinations, the output
// paths, the image overrides, the lock, and a plan per platform. Nothing is fetched or built.
// Its errors are *RequestError.
func (r Request) Resolve() (*Resolved, error) {
	rs, err := r.resolve()
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	return rs, nil
}

// resolve loads the lock, applies the image overrides and makes one plan per platform.
func (r Request) resolve() (*Resolved, error) {
	if err := r.checkOptions(); err != nil {
		return nil, err
	}
	l, builtin, err := r.loadLock()
	if err != nil {
		return nil, err
	}
	if r.Push {
		if err := r.checkTags(l); err != nil {
			return nil, err
		}
	}
	found, err := r.advisories(l)
	if err != nil {
		return nil, err
	}
	// A copy: the image overrides must not change the caller's lock.
	cp := *l
	l = &cp
	if image.IsLocal(r.BuilderImage) {
		// The builder is the Dagger engine's to pull (--engine host builds with this
		// machine's compiler and no builder image): it needs a registry, a loopback one will do.
		return nil, fmt.Errorf("--builder-image %q: the builder image is pulled by the Dagger engine and takes a registry reference: push it to one first (a loopback registry will do); --engine host uses this machine's compiler and no builder image", r.BuilderImage)
	}
	if err := overrideImage(&l.Images.Builder, r.BuilderImage); err != nil {
		return nil, fmt.Errorf("--builder-image %q: %w", r.BuilderImage, err)
	}
	if image.IsLocal(r.RuntimeImage) {
		// A local base stays out of the lock (whose images are registry references):
		// the build reads it through runtimeRef, and names it by digest alone.
		if _, err := image.ParseSource(r.RuntimeImage); err != nil {
			return nil, fmt.Errorf("--runtime-image: %w", err)
		}
	} else if err := overrideImage(&l.Images.Runtime, r.RuntimeImage); err != nil {
		return nil, fmt.Errorf("--runtime-image %q: %w", r.RuntimeImage, err)
	}
	plans, err := r.plans(l)
	if err != nil {
		return nil, err
	}
	// A published image must not rest on a checksum alone without anyone having said why.
	if missing := l.UnsignedWithoutReason(); len(missing) > 0 && r.Push {
		return nil, fmt.Errorf("refusing to publish: %s has no upstream signature in the lock and no \"unsigned\" reason: add its signature (url and signer fingerprints), or \"unsigned\": \"<why>\" to its lock entry in a reviewed change", strings.Join(missing, ", "))
	}
	return &Resolved{req: r, lock: l, plans: plans, builtin: builtin, advisories: found}, nil
}

// platformNames are platforms as events and messages spell them.
func platformNames(ps []plan.Platform) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// plans makes one plan of l per platform (the training plan for a ProfileDir request).
func (r Request) plans(l *lock.Lock) ([]*plan.Plan, error) {
	var plans []*plan.Plan
	for _, pl := range r.platforms() {
		opts := []plan.Option{plan.WithPlatform(pl), plan.WithCPU(r.CPU), plan.WithJobs(r.Jobs), plan.WithOptimize(r.Optimize)}
		if r.Modules != nil {
			opts = append(opts, plan.WithModules(r.Modules...))
		}
		newPlan := plan.New
		if r.ProfileDir != "" {
			newPlan = plan.NewTraining
		}
		p, err := newPlan(l, opts...)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// checkOptions refuses option combinations that make no sense and output paths a build
// could not write, before anything is fetched: a typo in a path costs a second, not a build.
func (r Request) checkOptions() error {
	if err := r.checkPublishOptions(); err != nil {
		return err
	}
	switch {
	case r.MaxSourceSize < 0:
		return fmt.Errorf("--max-source-size %d: the download size limit is negative: give a positive number of MiB", r.MaxSourceSize>>20)
	case r.Bundle && r.Tree == "":
		return errors.New("--bundle needs --tree DIR: the bundle's files are written into the install tree")
	case r.ProfileDir != "" && (r.Push || r.Output != "" || r.Tree != "" || r.Repo != "" || (r.Optimize != "" && r.Optimize != plan.OptimizePGO)):
		return fmt.Errorf("recording a PGO profile (profile directory %s) builds only the training: drop the image, tree and optimize options", r.ProfileDir)
	}
	if r.RegistryTimeout != 0 {
		if err := CheckRegistryTimeout(r.RegistryTimeout); err != nil {
			return err
		}
	}
	if err := image.CheckRevision(r.Revision); err != nil {
		return fmt.Errorf("the revision (--revision) %w", err)
	}
	if err := checkRef(r.Ref); err != nil {
		return err
	}
	if err := image.CheckSource(r.Origin.Repository); err != nil {
		return err
	}
	if err := image.CheckRef(r.Origin.Ref); err != nil {
		return fmt.Errorf("the source's git ref %w", err)
	}
	if n := len(r.platforms()); n > 1 && r.Engine == engine.Host {
		return fmt.Errorf("--platform %s: the host engine builds for this machine only; build several platforms with --engine dagger", strings.Join(platformNames(r.platforms()), ","))
	}
	if n := len(r.platforms()); n > 1 && (r.Output != "" || r.Tree != "") {
		return fmt.Errorf("%d platforms: --output and --tree take one platform; build them one platform at a time", n)
	}
	if r.Tree != "" && r.Output != "" {
		if err := apart(r.Tree, r.Output); err != nil {
			return err
		}
	}
	if r.Tree != "" {
		if err := checkNewDir(r.Tree); err != nil {
			return fmt.Errorf("install tree (--tree): %w", err)
		}
	}
	if r.Output != "" {
		if err := checkOutputPath(r.Output); err != nil {
			return fmt.Errorf("image output (--output): %w", err)
		}
	}
	if r.ProfileDir != "" {
		// Checked before the training's minutes, not when its tarball is written after them.
		if err := checkProfileDir(r.ProfileDir); err != nil {
			return fmt.Errorf("profile directory (--dir): %w", err)
		}
	}
	return nil
}

// checkPublishOptions: what publishing needs and what only publishing takes.
func (r Request) checkPublishOptions() error {
	switch {
	case r.Push && r.Repo == "":
		return errors.New("--push needs --image REPO[:TAG,...]: where to publish")
	case r.Push && r.NoSmoke:
		return errors.New("--no-smoke cannot be combined with --push: a pushed image is always smoke-tested before any tag moves")
	case r.Latest && !r.Push:
		return errors.New("--latest moves the channel tag (stable or mainline) and latest of a push: add --push --image REPO, or drop --latest")
	case r.DigestOnly && !r.Push:
		return errors.New("--digest-only only makes sense with --push")
	case r.SignKey != "" && !r.Push:
		return fmt.Errorf("--sign-key %s signs what --push publishes: add --push", r.SignKey)
	case r.Latest && len(r.Tags) > 0:
		return fmt.Errorf("--latest adds latest to the default tags; --image names its tags (%s): add latest there", strings.Join(r.Tags, ","))
	case r.DigestOnly && len(r.Tags) > 0:
		return fmt.Errorf("--digest-only moves no tag, but --image names tags (%s): give the repository %s only", strings.Join(r.Tags, ","), r.Repo)
	case r.DigestOnly && len(r.platforms()) > 1:
		return errors.New("--digest-only pushes one platform's image for 'ci manifest'; with several platforms build pushes the index itself")
	}
	return nil
}

// The range of RegistryTimeout (--registry-timeout): a registry request that moves less than
// 1 KiB in less than a second is not yet stalled (a TLS handshake, a slow first byte), and a
// stall bound over an hour is no bound.
const (
	minRegistryTimeout = time.Second
	maxRegistryTimeout = time.Hour
)

// CheckRegistryTimeout is nil when d is within 1s .. 1h (0, the default, is the caller's to
// allow).
func CheckRegistryTimeout(d time.Duration) error {
	if d < minRegistryTimeout || d > maxRegistryTimeout {
		return fmt.Errorf("--registry-timeout %s: give a duration from %s to %s (how long a registry request may move less than 1 KiB; default %s)", d, minRegistryTimeout, "1h", image.DefaultStallTimeout)
	}
	return nil
}

// DefaultFetchTimeout bounds fetching and preparing every source, as check-updates' --timeout
// bounds its run: a cold fetch of the stack is some 100 MB and a minute's unpacking on a slow
// machine; the stall floor ends a stalled download long before, and this ends whatever else
// would hold a build before it compiles anything (issue 47: a hostile archive's unpacking
// held a build for an estimated 70 CPU-minutes).
const DefaultFetchTimeout = 30 * time.Minute

// CheckFetchTimeouts refuses a --source-timeout outside 1s .. 1h and a --fetch-timeout
// outside 1s .. 24h.
func CheckFetchTimeouts(stall, fetch time.Duration) error {
	if stall < time.Second || stall > time.Hour {
		return fmt.Errorf("--source-timeout %s: give a duration from 1s to 1h (how long a download may move less than 1 KiB; default %s)", stall, source.DefaultStallTimeout)
	}
	if fetch < time.Second || fetch > 24*time.Hour {
		return fmt.Errorf("--fetch-timeout %s: give a duration from 1s to 24h (the deadline of fetching and unpacking the sources; default %s)", fetch, DefaultFetchTimeout)
	}
	return nil
}

// lockFile is the lock's path: what its keys directory and in-repository profiles are
// relative to.
func (r Request) lockFile() string {
	if r.LockFile == "" {
		return lock.DefaultPath
	}
	return r.LockFile
}

// overrideImage applies "REF" or "REF@sha256:..." to dst, so everything downstream (plan,
// annotations, SBOM) names what was used. The lock's archive snapshot stays: it pins the
// archive the builder installs from, whichever copy of the image is pulled.
func overrideImage(dst *lock.Image, ref string) error {
	if ref == "" {
		return nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("parsing reference: %w", err)
	}
	img := lock.Image{Ref: ref}
	if d, ok := r.(name.Digest); ok {
		img = lock.Image{Ref: strings.SplitN(ref, "@", 2)[0], Digest: d.DigestStr()}
	}
	img.Snapshot = dst.Snapshot
	*dst = img
	return nil
}

// start takes rs over and reports what the lock and plans say.
func (b *build) start(rs *Resolved) {
	if rs.builtin {
		b.sink.Send(progress.Detailf("lock: %s not found, using the lock built into this program", lock.DefaultPath))
	}
	b.l = rs.lock
	for _, p := range rs.plans {
		b.res.Platforms = append(b.res.Platforms, PlatformResult{Platform: p.Platform.String(), CPU: p.CPU})
	}
	for i, p := range rs.plans {
		b.targets = append(b.targets, &target{plan: p, res: &b.res.Platforms[i]})
	}
	if p := rs.plans[0]; b.req.ProfileDir == "" && (b.req.Optimize == "" || b.req.Optimize == plan.OptimizeAuto) {
		if p.Optimize == plan.OptimizePGO {
			b.sink.Send(progress.Infof("optimize: pgo (auto: the lock records a PGO profile for this build, sha256 %s)", p.ProfileSHA256))
		} else {
			b.sink.Send(progress.Infof("optimize: %s (auto: the lock records no PGO profile for this build; go run ./ci pgo-profile records one)", p.Optimize))
		}
	}
	for _, w := range rs.plans[0].Warnings {
		b.sink.Send(progress.Note{Level: progress.Warning, Text: w})
	}
	// Building a superseded or end-of-life branch is allowed (a pinned rebuild must stay
	// possible) but never silent: every build says so, pushed or not, on either engine.
	for _, w := range b.warnings(b.l) {
		b.sink.Send(progress.Note{Level: progress.Warning, Text: w})
		b.res.Warnings = append(b.res.Warnings, w)
	}
	if w := timePinWarning(b.req, b.l); w != "" {
		b.sink.Send(progress.Note{Level: progress.Warning, Text: w})
		b.res.Warnings = append(b.res.Warnings, w)
	}
	b.reportAdvisories(rs.advisories)
	b.reportUnsigned()
}

// timePinWarning is what a push says when the lock does not pin its builder in time: the
// image it publishes cannot be rebuilt to the same digest once the builder's tag or its
// distribution's archive moves (ci rebuild would install another compiler). A local build
// is not told: it publishes nothing anyone would rebuild.
func timePinWarning(r Request, l *lock.Lock) string {
	if !r.Push || l.PinnedInTime() {
		return ""
	}
	return fmt.Sprintf("not reproducible over time: the lock does not pin the builder in time (no %s), so a rebuild once the image tag or the archive moves installs another toolchain and gives another digest; pin them in the lock (docs/verifying.md#a-toolchain-pinned-in-time)", strings.Join(l.MissingTimePins(), ", no "))
}

// reportUnsigned says how each component without an upstream signature is pinned.
func (b *build) reportUnsigned() {
	for _, c := range b.l.Components {
		switch {
		case c.Signature != nil:
		case c.Git != nil:
			b.sink.Send(progress.Infof("unsigned: %s %s: pinned by git commit %.12s, its tree checked over the files built (%s)", c.Name, c.Version, c.Git.Commit, c.Unsigned))
		case c.Unsigned != "":
			b.sink.Send(progress.Infof("unsigned: %s %s: only its SHA-256 is checked (%s)", c.Name, c.Version, c.Unsigned))
		default:
			b.sink.Send(progress.Warningf("%s %s has no upstream signature in the lock: only its SHA-256 is checked", c.Name, c.Version))
		}
	}
}
