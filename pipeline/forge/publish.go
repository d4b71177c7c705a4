package forge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
)

func (b *build) publishOptions() []image.PublishOption {
	opts := []image.PublishOption{image.WithKeychain(image.Keychain()), image.WithLogf(b.vlogf)}
	if b.req.Insecure {
		opts = append(opts, image.WithInsecure())
	}
	return opts
}

// writeOutput writes --output once the image passed its smoke test (or was published).
func (b *build) writeOutput(ctx context.Context) error {
	if b.req.Output == "" || !b.req.WantsImage() || b.req.Push {
		return nil
	}
	return b.output()
}

func (b *build) output() error {
	t := b.targets[0]
	refName := outputRefName(b.req.Repo, b.req.Tags, b.l)
	created := time.Unix(b.l.SourceDateEpoch, 0).UTC()
	if err := image.WriteOutput(b.req.Output, t.img, refName, t.sbom, created); err != nil {
		return fmt.Errorf("writing --output %s: %w", b.req.Output, err)
	}
	b.logf("output: %s (as %s; SBOM %s.spdx.json)", b.req.Output, refName, b.req.Output)
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

// publish pushes each platform's image by digest and smoke-tests exactly that digest, then
// moves the tags: on the image itself or, for several platforms, on the index of them.
// --output is written only after that.
func (b *build) publish(ctx context.Context) error {
	if !b.req.Push {
		return nil
	}
	tags := b.req.tagsFor(b.l)
	imageTags := tags
	if len(b.targets) > 1 {
		imageTags = nil
	}
	created := time.Unix(b.l.SourceDateEpoch, 0).UTC()
	var pub *image.Published
	var digestRefs []string
	for _, t := range b.targets {
		opts := append(b.publishOptions(), image.WithVerify(b.verifier(t)), image.WithSBOM(t.sbom, created))
		opts = append(opts, b.signOptions()...)
		step := fmt.Sprintf("push (%s)", t.plan.Platform)
		b.stepStarted(step)
		start := time.Now()
		var err error
		if pub, err = image.Publish(ctx, t.img, b.req.Repo, imageTags, opts...); err != nil {
			return err
		}
		state, cache := "pushed", engine.Built
		if pub.AlreadyPresent {
			state, cache = "already in the registry", engine.Cached
		}
		b.stepDone(step, time.Since(start), cache)
		b.logf("push: %s (%s) %s, smoke-tested", pub.Digest, t.plan.Platform, state)
		digestRefs = append(digestRefs, pub.Digest.String())
	}
	if len(b.targets) > 1 {
		var err error
		if pub, err = image.Index(ctx, b.req.Repo, digestRefs, tags, append(b.publishOptions(), b.signOptions()...)...); err != nil {
			return err
		}
		b.logf("push: index %s of %s", pub.Digest, strings.Join(b.req.platforms(), ", "))
	}
	var tagRefs []string
	for _, t := range pub.Tags {
		tagRefs = append(tagRefs, t.String())
	}
	b.logf("push: tags moved to %s: %s", pub.Digest.DigestStr(), listOrNone(tagRefs))
	b.res.Published = pub
	if b.req.Output != "" {
		return b.output()
	}
	return nil
}

// signOptions sign each pushed image and the index of several (so a verifier that resolves
// a tag to either finds a signature) with --sign-key's key; without a key it does nothing.
func (b *build) signOptions() []image.PublishOption {
	if b.signer == nil {
		return nil
	}
	return []image.PublishOption{image.WithSign(func(ctx context.Context, ref name.Digest, ropts []remote.Option) error {
		sig, err := sign.Sign(ctx, ref, b.signer, ropts...)
		if err != nil {
			return err
		}
		b.logf("push: signed %s (signature %s)", ref.DigestStr(), sig.DigestStr())
		return nil
	})}
}

// verifier is the smoke test Publish runs on the pushed digest: the image pulled back from
// the registry, started by the engine.
func (b *build) verifier(t *target) image.VerifyFunc {
	return func(ctx context.Context, ref name.Digest) error {
		pushed, err := remote.Image(ref, remote.WithAuthFromKeychain(image.Keychain()), remote.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("pulling %s back: %w", ref, err)
		}
		b.vlogf("smoke checks of %s", ref)
		_, err = b.smoke(ctx, t, pushed)
		return err
	}
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
