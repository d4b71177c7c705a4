package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
)

// TagEvent is what the default tags are decided from (image.Tags).
func (r Request) TagEvent() image.TagEvent {
	return image.TagEvent{Ref: r.Ref, Revision: r.Revision, Latest: r.Latest}
}

// PublishTags are the tags a push of r moves: the ones r names, none with DigestOnly, else
// the one rule of image.Tags for the lock, the git ref, the revision and Latest. `ci tags`,
// `ci manifest` and the build itself all ask here.
func (r Request) PublishTags() ([]string, error) {
	if err := image.CheckRevision(r.Revision); err != nil {
		return nil, fmt.Errorf("the revision %w", err)
	}
	if err := checkRef(r.Ref); err != nil {
		return nil, &RequestError{Err: err}
	}
	l, _, err := r.loadLock()
	if err != nil {
		return nil, asRequestError(err)
	}
	if err := r.checkTags(l); err != nil {
		return nil, &RequestError{Err: err}
	}
	return r.tagsFor(l), nil
}

// checkRef refuses a git ref (--ref) the tags cannot be decided from (image.CheckRef).
func checkRef(ref string) error {
	if err := image.CheckRef(ref); err != nil {
		return fmt.Errorf("--ref %w", err)
	}
	return nil
}

// checkTags refuses, before anything is fetched or pushed, a tag a registry would refuse
// (image.CheckTag): one --image names, or one made from the lock's versions and the git ref
// (the exact stack tag of a lock with long versions can pass 128 characters).
func (r Request) checkTags(l *lock.Lock) error {
	for _, t := range r.tagsFor(l) {
		err := image.CheckTag(t)
		switch {
		case err == nil:
		case len(r.Tags) > 0:
			return fmt.Errorf("--image %s:%s: tag %w", r.Repo, strings.Join(r.Tags, ","), err)
		default:
			return fmt.Errorf("the tags made from the lock's versions and --ref: %w; name the tags yourself (--image REPO:TAG,...)", err)
		}
	}
	return nil
}

// asRequestError is err as a *RequestError (a refusal of what was asked, before anything
// ran), unless it is one already.
func asRequestError(err error) error {
	if errors.As(err, new(*RequestError)) {
		return err
	}
	return &RequestError{Err: err}
}

func (r Request) tagsFor(l *lock.Lock) []string {
	if len(r.Tags) > 0 || r.DigestOnly {
		return r.Tags
	}
	return image.Tags(l, r.TagEvent())
}

// Index is `ci manifest`: the per-platform images Refs (REPO@sha256:...) joined into one
// index in Repo, pushed by digest, then tagged with Tags, all or none (image.Index).
type Index struct {
	Repo     string
	Tags     []string
	Refs     []string
	Insecure bool // plain HTTP to a registry not on loopback
	// SignKey, when set, signs the index with this PEM private key (as ci build --push
	// --sign-key signs the index it pushes) and attests it with each platform image's
	// attached SBOM, after the index is pushed by digest and before any tag moves.
	SignKey string
}

// Publish pushes the index and moves the tags; registry steps go to sink as Detail notes.
func (x Index) Publish(ctx context.Context, sink progress.Sink) (name.Digest, error) {
	opts := registryOptions(sink, x.Insecure, 0)
	if x.SignKey != "" {
		// A key that cannot sign fails now, before anything is read or pushed; what is wrong
		// with it is the input named on the command line.
		s, err := sign.LoadKey(x.SignKey)
		if err != nil {
			return name.Digest{}, &RequestError{Err: fmt.Errorf("%w (nothing was pushed)", err)}
		}
		if sink == nil {
			sink = progress.Discard
		}
		read := slices.Clone(opts) // the per-platform images' SBOMs are read as the images are
		opts = append(opts, image.WithSign(func(ctx context.Context, ref name.Digest, ropts []remote.Option) error {
			sboms := make([][]byte, 0, len(x.Refs))
			for _, r := range x.Refs {
				doc, err := image.AttachedSBOM(ctx, r, read...)
				if err != nil {
					return fmt.Errorf("attesting the index with each platform's SBOM: %w", err)
				}
				sboms = append(sboms, doc)
			}
			signed, err := sign.SignAndAttestSBOMs(ctx, ref, s, sboms, ropts...)
			if err != nil {
				return err
			}
			sink.Send(progress.Signed{Digest: ref.DigestStr(), Signature: signed.Signature.DigestStr(), Attestations: signed.Attestations.DigestStr(), SBOMsOnly: true})
			return nil
		}))
	}
	res, err := image.Index(ctx, x.Repo, x.Refs, x.Tags, opts...)
	if err != nil {
		return name.Digest{}, err
	}
	return res.Digest, nil
}

// DryRun reads the per-platform images and returns the index Publish would push (indented
// JSON) and its digest, writing nothing; SignKey is loaded, not used.
func (x Index) DryRun(ctx context.Context, sink progress.Sink) ([]byte, string, error) {
	if x.SignKey != "" {
		// The key is checked as Publish would check it: a dry run that passes is one whose
		// signing can start.
		if _, err := sign.LoadKey(x.SignKey); err != nil {
			return nil, "", &RequestError{Err: err}
		}
	}
	idx, err := image.BuildIndex(ctx, x.Refs, registryOptions(sink, x.Insecure, 0)...)
	if err != nil {
		return nil, "", err
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, "", fmt.Errorf("reading the index manifest: %w", err)
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, "", fmt.Errorf("computing the index digest: %w", err)
	}
	var pretty any
	if err := json.Unmarshal(raw, &pretty); err != nil {
		return nil, "", fmt.Errorf("parsing the index manifest: %w", err)
	}
	out, err := json.MarshalIndent(pretty, "", "  ")
	return out, d.String(), err
}
