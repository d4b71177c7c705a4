package image

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/registryauth"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// VerifyFunc checks the image at exactly ref (a digest reference) before any tag moves:
// the smoke tests. A non-nil error stops the publish with every tag where it was.
type VerifyFunc func(ctx context.Context, ref name.Digest) error

// WithVerify runs f on the pushed digest before tags move (see VerifyFunc).
func WithVerify(f VerifyFunc) Option { return func(o *options) { o.verify = f } }

// WithSBOM attaches doc (from SBOM) as a referrer of the image once it is verified and
// before tags move; created stamps the artifact (SOURCE_DATE_EPOCH).
func WithSBOM(doc []byte, created time.Time) Option {
	return func(o *options) { o.sbom, o.sbomCreated = doc, created }
}

// WithKeychain replaces the default keychain (Keychain()).
func WithKeychain(k registryauth.Source) Option {
	return func(o *options) { o.keychain = k }
}

// WithProgress sends one Detail note per registry step to sink (default: discarded).
// Notes name references and digests, never credentials.
func WithProgress(sink progress.Sink) Option {
	return func(o *options) { o.sink = sink }
}

// withRetryBackoff sets how transient registry errors (5xx, 429, resets, EOF) are
// retried; the default is go-containerregistry's (1s, x3, 3 tries).
func withRetryBackoff(b remote.Backoff) Option {
	return func(o *options) { o.backoff = &b }
}

// withJobs sets how many blobs are uploaded at once: one, for a test that stops the
// registry between two uploads and must not catch it in the middle of another.
func withJobs(n int) Option { return func(o *options) { o.jobs = n } }

// WithInsecure allows plain HTTP to a registry that is not on loopback (loopback and
// *.local always use HTTP).
func WithInsecure() Option { return func(o *options) { o.insecure = true } }

func (o *options) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(o.keychain),
		remote.WithUserAgent("nginx-forge"),
		stallOption(o.stall),
	}
	if o.backoff != nil {
		opts = append(opts, remote.WithRetryBackoff(*o.backoff))
	}
	if o.jobs > 0 {
		opts = append(opts, remote.WithJobs(o.jobs))
	}
	return opts
}

// RemoteOptions are the go-containerregistry options every registry access with opts uses
// (the credentials, the stall deadline, the retries), for a caller that reads a registry
// itself: ci rebuild reads a provenance and the image it describes with the same ones.
func RemoteOptions(ctx context.Context, opts ...Option) []remote.Option {
	return makeOptions(opts).remoteOptions(ctx)
}

// Keychain is the credentials source every registry access uses by default
// (registryauth.Keychain: the Docker config, then GITHUB_TOKEN for ghcr.io). It is exported
// here for the command, which cannot import the library's internal packages, so that
// `ci smoke` pulls with the credentials `ci build --push` pushed with.
func Keychain() registryauth.Source { return registryauth.Keychain() }

// Published is what a successful publish did.
type Published struct {
	// Digest is the pushed image (or index) by digest.
	Digest name.Digest
	// AlreadyPresent is true when the registry had the manifest and nothing was uploaded.
	AlreadyPresent bool
	// SBOM is the referrer artifact's digest, when one was attached.
	SBOM *name.Digest
	// Tags are the tags now pointing at Digest.
	Tags []name.Tag
}

// Publish steps, named in errors.
const (
	StepPrepare = "prepare"
	StepPush    = "push"
	StepVerify  = "verify"
	StepSBOM    = "sbom"
	StepSign    = "sign"
	StepTag     = "tag"
)

// PublishError says which step failed and what the registry holds afterwards.
type PublishError struct {
	Step   string
	Digest name.Digest
	// Pushed: the manifest is in the registry (by digest, untagged unless Moved says so).
	Pushed bool
	// Verified: the verify function passed.
	Verified bool
	// Moved are tags that point at Digest after the failure (a failed restore).
	Moved []string
	// Restored are tags that were moved during the tag step and then put back.
	Restored []string
	// Removed are tags this publish created during the tag step and then deleted again.
	Removed []string
	// ImageDeleted: the registry could only remove the created tags by deleting the image
	// this publish pushed (distribution 2.x); Digest is no longer in the registry.
	ImageDeleted bool
	// Unchanged are tags left where they were (including restored ones).
	Unchanged []string
	Err       error
}

func (e *PublishError) Unwrap() error { return e.Err }

func (e *PublishError) Error() string {
	return fmt.Sprintf("publish failed at step %q: %v; registry state: %s", e.Step, e.Err, e.State())
}

// State describes what is left in the registry.
func (e *PublishError) State() string {
	var s string
	switch {
	case e.ImageDeleted:
		s = fmt.Sprintf("%s was pushed and verified, then deleted again with the tags it had been given (the registry cannot delete a tag alone)", e.Digest)
	case !e.Pushed && e.Step == StepPrepare:
		s = "nothing pushed"
	case !e.Pushed:
		s = fmt.Sprintf("%s not pushed (blobs uploaded so far are unreferenced and will be garbage-collected)", e.Digest)
	case !e.Verified && e.Step == StepVerify:
		s = fmt.Sprintf("pushed %s untagged, verification failed", e.Digest)
	case e.Verified:
		s = fmt.Sprintf("pushed and verified %s", e.Digest)
	default:
		s = fmt.Sprintf("pushed %s", e.Digest)
	}
	if len(e.Moved) == 0 {
		s += "; no tag moved"
		if len(e.Restored) > 0 {
			s += " (put back where they were: " + strings.Join(e.Restored, ", ") + ")"
		}
		if len(e.Removed) > 0 {
			s += " (created, then deleted again: " + strings.Join(e.Removed, ", ") + ")"
		}
	} else {
		s += "; tags moved to it: " + strings.Join(e.Moved, ", ")
	}
	if len(e.Unchanged) > 0 && len(e.Moved) > 0 {
		s += "; tags unchanged: " + strings.Join(e.Unchanged, ", ")
	}
	return s
}

// target is what gets published: an image or an index.
type target interface {
	Digest() (v1.Hash, error)
	RawManifest() ([]byte, error)
}

// Publish pushes img to repo by digest (skipping it if the registry already has that
// manifest), runs the verify function on exactly that digest, attaches the SBOM, and only
// then points each tag at the digest. Any failure stops the sequence and leaves every tag
// where it was: a failure while moving tags puts the tags already moved back where they
// were and deletes the ones it created (a registry that refuses to delete a tag keeps it,
// and the error lists it under Moved). The error is a *PublishError.
func Publish(ctx context.Context, img v1.Image, repo string, tags []string, opts ...Option) (*Published, error) {
	o := makeOptions(opts)
	return publish(ctx, img, repo, tags, o, func(ref name.Digest, ropts []remote.Option) error {
		return remote.Write(ref, img, ropts...)
	})
}

func publish(ctx context.Context, t target, repoStr string, tagNames []string, o *options, push func(name.Digest, []remote.Option) error) (*Published, error) {
	p, err := newPublication(ctx, t, repoStr, tagNames, o)
	if err != nil {
		return nil, err
	}
	for _, step := range []func() error{
		func() error { return p.pushByDigest(push) }, // 1: push by digest, unless present
		p.verify,     // 2: verify exactly that digest
		p.attachSBOM, // 3: the SBOM, as a referrer of the verified image
		p.sign,       // 3b: sign the verified digest, so no tag ever names an unsigned one
		p.moveTags,   // 4: move the tags, putting them back on a failure
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p.res, nil
}

// publication is one Publish in progress: what it pushes where, and the PublishError that
// records how far it got.
type publication struct {
	ctx   context.Context
	t     target
	h     v1.Hash
	repo  name.Repository
	ref   name.Digest
	tags  []name.Tag
	o     *options
	ropts []remote.Option
	perr  *PublishError
	res   *Published
}

func newPublication(ctx context.Context, t target, repoStr string, tagNames []string, o *options) (*publication, error) {
	h, err := t.Digest()
	if err != nil {
		return nil, &PublishError{Step: StepPrepare, Err: fmt.Errorf("computing digest: %w", err)}
	}
	var nopts []name.Option
	if o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(repoStr, nopts...)
	if err != nil {
		return nil, &PublishError{Step: StepPrepare, Err: fmt.Errorf("parsing repository %q: %w", repoStr, err)}
	}
	ref := repo.Digest(h.String())
	p := &publication{ctx: ctx, t: t, h: h, repo: repo, ref: ref, o: o, ropts: o.remoteOptions(ctx),
		perr: &PublishError{Step: StepPrepare, Digest: ref}, res: &Published{Digest: ref}}
	seen := map[string]bool{}
	for _, tn := range tagNames {
		if seen[tn] {
			continue
		}
		seen[tn] = true
		tag, err := name.NewTag(repo.String()+":"+tn, nopts...)
		if err != nil {
			return nil, p.fail(StepPrepare, fmt.Errorf("tag %q: %w", tn, err))
		}
		p.tags = append(p.tags, tag)
		p.perr.Unchanged = append(p.perr.Unchanged, tn)
	}
	return p, nil
}

func (p *publication) fail(step string, err error) error {
	p.perr.Step, p.perr.Err = step, err
	return p.perr
}

func (p *publication) pushByDigest(push func(name.Digest, []remote.Option) error) error {
	if d, err := remote.Head(p.ref, p.ropts...); err == nil && d.Digest == p.h {
		p.res.AlreadyPresent = true
		p.o.sink.Send(progress.Detailf("%s already present, not pushed again", p.ref))
	} else if err != nil && !isNotFound(err) {
		return p.fail(StepPush, fmt.Errorf("checking whether %s exists: %w", p.ref, err))
	} else {
		p.o.sink.Send(progress.Detailf("pushing %s", p.ref))
		if err := push(p.ref, p.ropts); err != nil {
			return p.fail(StepPush, fmt.Errorf("pushing %s: %w", p.ref, err))
		}
	}
	p.perr.Pushed = true
	return nil
}

func (p *publication) verify() error {
	if p.o.verify == nil {
		p.o.sink.Send(progress.Detailf("no verification configured for %s", p.ref))
	} else {
		p.o.sink.Send(progress.Detailf("verifying %s", p.ref))
		if err := p.o.verify(p.ctx, p.ref); err != nil {
			return p.fail(StepVerify, err)
		}
	}
	p.perr.Verified = true
	return nil
}

func (p *publication) attachSBOM() error {
	if p.o.sbom == nil {
		return nil
	}
	img, ok := p.t.(v1.Image)
	if !ok {
		return p.fail(StepSBOM, errors.New("an SBOM can only be attached to an image"))
	}
	art, err := sbomArtifact(img, p.o.sbom, p.o.sbomCreated)
	if err != nil {
		return p.fail(StepSBOM, err)
	}
	ad, err := art.Digest()
	if err != nil {
		return p.fail(StepSBOM, err)
	}
	aref := p.repo.Digest(ad.String())
	p.o.sink.Send(progress.Detailf("attaching SBOM %s", aref))
	if err := remote.Write(aref, art, p.ropts...); err != nil {
		return p.fail(StepSBOM, fmt.Errorf("pushing SBOM %s: %w", aref, err))
	}
	p.res.SBOM = &aref
	return nil
}

func (p *publication) sign() error {
	if p.o.sign == nil {
		return nil
	}
	p.o.sink.Send(progress.Detailf("signing %s", p.ref))
	if err := p.o.sign(p.ctx, p.ref, p.ropts); err != nil {
		return p.fail(StepSign, fmt.Errorf("signing %s: %w", p.ref, err))
	}
	return nil
}

// moveTags points each tag at the digest, remembering where they were so that a failure
// can put them back.
func (p *publication) moveTags() error {
	prev := map[string]*remote.Descriptor{}
	for _, tag := range p.tags {
		d, err := remote.Get(tag, p.ropts...)
		switch {
		case err == nil:
			prev[tag.TagStr()] = d
		case isNotFound(err):
		default:
			return p.fail(StepTag, fmt.Errorf("reading tag %s before moving it: %w", tag, err))
		}
	}
	for i, tag := range p.tags {
		p.o.sink.Send(progress.Detailf("tagging %s -> %s", tag, p.h))
		if err := remote.Tag(tag, p.t, p.ropts...); err != nil {
			p.rollBackTags(i, prev, fmt.Errorf("moving tag %s to %s: %w", tag, p.h, err))
			return p.perr
		}
		p.res.Tags = append(p.res.Tags, tag)
	}
	return nil
}

// rollBackTags records the failure to move tag i, puts back the tags moved before it and
// removes the ones this publish created.
func (p *publication) rollBackTags(i int, prev map[string]*remote.Descriptor, err error) {
	perr := p.perr
	perr.Err, perr.Step, perr.Unchanged = err, StepTag, nil
	for _, later := range p.tags[i:] {
		perr.Unchanged = append(perr.Unchanged, later.TagStr())
	}
	var created []name.Tag
	for _, done := range p.tags[:i] {
		was := prev[done.TagStr()]
		if was == nil {
			created = append(created, done)
			continue
		}
		if was.Digest == p.h {
			perr.Unchanged = append(perr.Unchanged, done.TagStr())
			continue
		}
		if rerr := remote.Tag(done, was, p.ropts...); rerr != nil {
			perr.Moved = append(perr.Moved, fmt.Sprintf("%s (was %s; restoring failed: %v)", done.TagStr(), was.Digest, rerr))
		} else {
			perr.Unchanged = append(perr.Unchanged, done.TagStr())
			perr.Restored = append(perr.Restored, done.TagStr())
		}
	}
	removeCreated(p.ref, created, p.res.AlreadyPresent, perr, p.ropts)
}

// removeCreated deletes the tags a failed tag step created. Deleting by tag removes the tag
// alone (OCI distribution spec 1.1, distribution 3, go-containerregistry's registry).
// distribution 2.x refuses that, but deletes a manifest by digest together with every tag
// on it: when this publish pushed the manifest (nothing else can have tagged it, and the
// tags put back point elsewhere), that removes the new tags, and the untagged image goes
// with them. Tags neither way can remove are listed in Moved.
func removeCreated(ref name.Digest, created []name.Tag, alreadyPresent bool, perr *PublishError, ropts []remote.Option) {
	var left []name.Tag
	for _, tag := range created {
		if err := remote.Delete(tag, ropts...); err != nil {
			left = append(left, tag)
			continue
		}
		perr.Removed = append(perr.Removed, tag.TagStr())
	}
	if len(left) == 0 {
		return
	}
	if !alreadyPresent {
		if err := remote.Delete(ref, ropts...); err == nil {
			perr.Pushed = false
			perr.ImageDeleted = true
			for _, tag := range left {
				perr.Removed = append(perr.Removed, tag.TagStr())
			}
			return
		}
	}
	for _, tag := range left {
		perr.Moved = append(perr.Moved, tag.TagStr()+" (new; the registry deletes neither the tag alone nor, since it held the image before, the image with its tags)")
	}
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}
