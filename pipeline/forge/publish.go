package forge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
)

// publisher is where the built, smoke-tested images go (compare ko's publish.Interface):
// the registry (--push), an OCI layout or tarball (--output), or both, in that order (an
// --output of a pushed build is written only once the push passed). publisherFor chooses,
// once per build.
type publisher interface {
	publish(ctx context.Context, targets []*target) error
}

// publisherFor is the one chooser: what the request asks for, nothing when it asks for no
// image (an install tree, a profile).
func (b *build) publisherFor() publisher {
	var ps multi
	if !b.req.WantsImage() {
		return ps
	}
	if b.req.Push {
		ps = append(ps, &registry{b: b})
	}
	if b.req.Output != "" {
		ps = append(ps, &output{b: b, path: b.req.Output})
	}
	return ps
}

// multi publishes to each in turn and stops at the first failure.
type multi []publisher

func (m multi) publish(ctx context.Context, targets []*target) error {
	for _, p := range m {
		if err := p.publish(ctx, targets); err != nil {
			return err
		}
	}
	return nil
}

// publish is the build's last step.
func (b *build) publish(ctx context.Context) error {
	return b.publisherFor().publish(ctx, b.targets)
}

// registryOptions are the registry options every pull and push uses, a build's and ci
// manifest's alike: the one keychain, registry steps as Detail notes on sink, plain HTTP
// when insecure, and the stall deadline when stall is set (0 keeps image's default).
func registryOptions(sink progress.Sink, insecure bool, stall time.Duration) []image.Option {
	if sink == nil {
		sink = progress.Discard
	}
	opts := []image.Option{image.WithKeychain(image.Keychain()), image.WithProgress(sink), image.WithStallTimeout(stall)}
	if insecure {
		opts = append(opts, image.WithInsecure())
	}
	return opts
}

// output writes the one platform's image to path (an OCI layout directory, or a tarball).
type output struct {
	b    *build
	path string
}

func (o *output) publish(ctx context.Context, targets []*target) error {
	// Assembling takes no context: a signal that came meanwhile is seen here, before
	// anything is written (issue 47: an interrupted build still wrote --output).
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: --output %s was not written: %w", o.path, err)
	}
	b, t := o.b, targets[0]
	refName := outputRefName(b.req.Repo, b.req.Tags, b.l)
	created := time.Unix(b.l.SourceDateEpoch, 0).UTC()
	if err := image.WriteOutput(o.path, t.img, refName, t.sbom, created); err != nil {
		return fmt.Errorf("writing --output %s: %w", o.path, err)
	}
	b.sink.Send(progress.Infof("output: %s (as %s; SBOM %s.spdx.json)", o.path, refName, o.path))
	return nil
}

// outputRefName names the image inside an --output tarball: the first tag asked for, or the
// repository with the nginx version.
func outputRefName(repo string, tags []string, l *lock.Lock) string {
	if repo == "" {
		repo = "nginx-forge"
	}
	if len(tags) == 0 {
		tags = image.Tags(l, image.TagEvent{})
	}
	return repo + ":" + tags[0]
}

// registry pushes each platform's image by digest and smoke-tests exactly that digest, then
// moves the tags: on the image itself or, for several platforms, on the index of them.
type registry struct{ b *build }

func (r *registry) publish(ctx context.Context, targets []*target) error {
	b := r.b
	tags := b.req.tagsFor(b.l)
	imageTags := tags
	if len(targets) > 1 {
		imageTags = nil
	}
	var pub *image.Published
	var digestRefs []string
	for _, t := range targets {
		var err error
		if pub, err = r.pushImage(ctx, t, imageTags); err != nil {
			return err
		}
		digestRefs = append(digestRefs, pub.Digest.String())
	}
	if len(targets) > 1 {
		var err error
		if pub, err = image.Index(ctx, b.req.Repo, digestRefs, tags, append(b.regOpts, r.signOptions(targets...)...)...); err != nil {
			return err
		}
		b.sink.Send(progress.IndexPushed{Digest: pub.Digest.String(), Platforms: platformNames(b.req.platforms())})
	}
	var tagRefs []string
	for _, t := range pub.Tags {
		tagRefs = append(tagRefs, t.String())
	}
	b.sink.Send(progress.Tagged{Digest: pub.Digest.DigestStr(), Tags: tagRefs})
	b.res.Published = pub
	return nil
}

// pushImage publishes one platform's image (image.Publish: push by digest, the smoke test
// of that digest, the SBOM, the signature, then the tags).
func (r *registry) pushImage(ctx context.Context, t *target, tags []string) (*image.Published, error) {
	b := r.b
	created := time.Unix(b.l.SourceDateEpoch, 0).UTC()
	opts := append(append([]image.Option{}, b.regOpts...), image.WithVerify(r.verifier(t)), image.WithSBOM(t.sbom, created))
	opts = append(opts, r.signOptions(t)...)
	step := fmt.Sprintf("push (%s)", t.plan.Platform)
	b.stepStarted(step)
	start := time.Now()
	pub, err := image.Publish(ctx, t.img, b.req.Repo, tags, opts...)
	if err != nil {
		return nil, err
	}
	cache := progress.Built
	if pub.AlreadyPresent {
		cache = progress.Cached
	}
	b.stepDone(step, time.Since(start), cache)
	b.sink.Send(progress.Pushed{Platform: t.plan.Platform.String(), Digest: pub.Digest.String(), AlreadyPresent: pub.AlreadyPresent})
	return pub, nil
}

// signOptions sign each pushed image and the index of several (so a verifier that resolves
// a tag to either finds a signature) with --sign-key's key, and attach as signed attestations
// the SBOM of each of ts (the image's own; each platform's for the index) and the provenance
// of their builds, through the one sign hook (image.WithSign); without a key they do nothing.
func (r *registry) signOptions(ts ...*target) []image.Option {
	b := r.b
	if b.signer == nil {
		return nil
	}
	return []image.Option{image.WithSign(func(ctx context.Context, ref name.Digest, ropts []remote.Option) error {
		sboms, build, err := b.attestations(ts)
		if err != nil {
			return err
		}
		signed, err := sign.SignAndAttest(ctx, ref, b.signer, sboms, build, ropts...)
		if err != nil {
			return err
		}
		b.sink.Send(progress.Signed{Digest: ref.DigestStr(), Signature: signed.Signature.DigestStr(), Attestations: signed.Attestations.DigestStr()})
		return nil
	})}
}

// attestations are what signOptions attests for ts: their SBOMs and how each was built.
func (b *build) attestations(ts []*target) ([][]byte, sign.Build, error) {
	var sboms [][]byte
	o := b.req.Origin
	build := sign.Build{Lock: provenanceLock(b.l), Engine: b.eng.Name(),
		Origin: sign.Origin{BuilderID: o.BuilderID, Repository: o.Repository, Ref: o.Ref, Revision: b.req.Revision}}
	for _, t := range ts {
		base, err := t.base.Digest()
		if err != nil {
			return nil, sign.Build{}, fmt.Errorf("digest of the runtime image for %s: %w", t.plan.Platform, err)
		}
		sources, err := planSources(b.l, t.plan)
		if err != nil {
			return nil, sign.Build{}, err
		}
		sboms = append(sboms, t.sbom)
		build.Platforms = append(build.Platforms, sign.PlatformBuild{
			Platform: t.plan.Platform.String(), CPU: t.plan.CPU, Optimize: t.plan.Optimize, Modules: t.plan.Modules,
			Sources: sources, Base: imageDependency(b.runtimeRef(), base.String()),
			Builder: builderDependency(t.builder.Image), Toolchain: t.toolchain,
		})
	}
	return sboms, build, nil
}

// planSources are the lock inputs p's stages compile, in stage order, as a provenance
// lists them.
func planSources(l *lock.Lock, p *plan.Plan) ([]sign.Source, error) {
	var sources []sign.Source
	for _, s := range p.Stages {
		if s.Source.Component == "" {
			continue
		}
		c, ok := l.Input(s.Source.Component)
		if !ok {
			return nil, fmt.Errorf("provenance: the %s build read %q, which the lock does not have", p.Platform, s.Source.Component)
		}
		sources = append(sources, provenanceSource(c))
	}
	return sources, nil
}

// Provenance is what a provenance of rs's build on engineName states before anything is
// built: the lock, each platform's flags and the sources its stages compile (the images'
// digests, which only the build reads, left out). ci rebuild compares it with a provenance
// read back (sign.Recorded.Check) before it builds.
func (rs *Resolved) Provenance(engineName string) (sign.Build, error) {
	b := sign.Build{Lock: provenanceLock(rs.lock), Engine: engineName}
	for _, p := range rs.plans {
		sources, err := planSources(rs.lock, p)
		if err != nil {
			return sign.Build{}, err
		}
		b.Platforms = append(b.Platforms, sign.PlatformBuild{
			Platform: p.Platform.String(), CPU: p.CPU, Optimize: p.Optimize, Modules: p.Modules, Sources: sources,
		})
	}
	return b, nil
}

// provenanceLock is what a provenance states of l: its components by name and version,
// its source date and its pinned images.
func provenanceLock(l *lock.Lock) sign.LockParams {
	p := sign.LockParams{SourceDateEpoch: l.SourceDateEpoch, BuilderImage: l.Images.Builder.Pinned(), RuntimeImage: l.Images.Runtime.Pinned(),
		BuilderSnapshot: l.Images.Builder.Snapshot}
	for _, c := range l.Components {
		p.Components = append(p.Components, sign.NameVersion{Name: c.Name, Version: c.Version})
	}
	return p
}

// provenanceSource is a lock input (a component, or a recorded profile's source) as the
// provenance lists what a stage compiled.
func provenanceSource(c lock.Component) sign.Source {
	src := sign.Source{Name: c.Name, URL: c.URL, SHA256: c.SHA256}
	if g := c.Git; g != nil {
		src.GitRepository, src.GitTag, src.GitCommit = g.Repository, g.Tag, g.Commit
	}
	return src
}

// imageDependency is the image ref (REPO[:TAG][@DIGEST]) pulled at digest as the provenance
// names it: by the purl the SBOM gives the base (image.OCIPurl), or by its digest alone when
// it was read from a file here (oci:, docker-archive:), whose path means nothing to a verifier.
func imageDependency(ref, digest string) sign.Dependency {
	d := sign.Dependency{Digest: digest}
	if !image.IsLocal(ref) {
		d.URI = image.OCIPurl(ref, digest)
	}
	return d
}

// builderDependency is the builder image as the engine pulled it (REF@sha256:...), or none
// for "": the host engine compiles with the machine's own toolchain.
func builderDependency(pulled string) sign.Dependency {
	if pulled == "" {
		return sign.Dependency{}
	}
	ref, digest, _ := strings.Cut(pulled, "@")
	return imageDependency(ref, digest)
}

// verifier is the smoke test Publish runs on the pushed digest: the image pulled back from
// the registry, started by the engine.
func (r *registry) verifier(t *target) image.VerifyFunc {
	return func(ctx context.Context, ref name.Digest) error {
		pushed, err := remote.Image(ref, remote.WithAuthFromKeychain(image.Keychain()), remote.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("pulling %s back: %w", ref, err)
		}
		r.b.sink.Send(progress.Detailf("smoke checks of %s", ref))
		_, err = r.b.smoke(ctx, t, pushed)
		return err
	}
}
