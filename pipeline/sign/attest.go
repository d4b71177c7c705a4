package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// An attestation, as `cosign attest --key` writes it and `cosign verify-attestation --key`
// reads it: a layer of the manifest tagged sha256-<hex>.att in the image's repository, whose
// bytes are a DSSE envelope (sigstore's pkg/signature/dsse) over an in-toto statement
// (github.com/in-toto/attestation) naming the image's digest as its subject. The layer's
// predicateType annotation says what the statement holds; its signature annotation is empty,
// as cosign leaves it (the signature is inside the envelope). Registries without the
// referrers API hold it like any tag.
const (
	// dsseMediaType is an attestation layer's media type (cosign's types.DssePayloadType).
	dsseMediaType types.MediaType = "application/vnd.dsse.envelope.v1+json"
	// inTotoPayloadType is the DSSE payload type of an in-toto statement.
	inTotoPayloadType = "application/vnd.in-toto+json"
	// predicateTypeAnnotation names the statement's predicate type on its layer.
	predicateTypeAnnotation = "predicateType"
	// predicateSPDX is an SPDX document's predicate type (cosign verify-attestation --type
	// spdxjson).
	predicateSPDX = "https://spdx.dev/Document"
	// predicateSLSAProvenance1 is SLSA provenance v1's (--type slsaprovenance1).
	predicateSLSAProvenance1 = "https://slsa.dev/provenance/v1"
)

// attestation is one statement to attach: its predicate type and the predicate, a JSON
// object (an SPDX document, a provenance predicate).
type attestation struct {
	PredicateType string
	Predicate     []byte
}

// attestationTag is where cosign looks for the attestations of ref: REPO:sha256-<hex>.att.
func attestationTag(ref name.Digest) (name.Tag, error) {
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return name.Tag{}, fmt.Errorf("attestation tag of %s: %w", ref, err)
	}
	return ref.Repository.Tag(h.Algorithm + "-" + h.Hex + ".att"), nil
}

// inTotoStatement is the in-toto v1 statement of a about ref: ref's repository and digest its only
// subject (the subject cosign verify-attestation matches against the image), checked by the
// in-toto library's Validate, as compact JSON.
func inTotoStatement(ref name.Digest, a attestation) ([]byte, error) {
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return nil, fmt.Errorf("statement about %s: %w", ref, err)
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(a.Predicate, pred); err != nil {
		return nil, fmt.Errorf("statement about %s: the %s predicate is not a JSON object: %w", ref, a.PredicateType, err)
	}
	st := &ita1.Statement{
		Type:          ita1.StatementTypeUri,
		Subject:       []*ita1.ResourceDescriptor{{Name: ref.Repository.String(), Digest: map[string]string{h.Algorithm: h.Hex}}},
		PredicateType: a.PredicateType,
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("statement about %s (%s): %w", ref, a.PredicateType, err)
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("statement about %s (%s): %w", ref, a.PredicateType, err)
	}
	// protojson varies its whitespace on purpose; compact JSON is the same bytes each time.
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, fmt.Errorf("statement about %s (%s): %w", ref, a.PredicateType, err)
	}
	return out.Bytes(), nil
}

// attest signs a statement of each attestation about ref with s and pushes them to ref's
// repository under attestationTag(ref). What s attested there before with the same predicate
// types is replaced (a rebuild of the same digest restates, it does not pile up); a statement
// s already signed with the same bytes keeps its layer, so a rerun pushes nothing; layers by
// other keys or of other types stay. It returns the attestation manifest's digest reference.
func attest(ctx context.Context, ref name.Digest, s signature.SignerVerifier, atts []attestation, opts ...remote.Option) (name.Digest, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	tag, err := attestationTag(ref)
	if err != nil {
		return name.Digest{}, err
	}
	statements := make([][]byte, len(atts))
	replace := map[string]bool{}
	for i, a := range atts {
		if statements[i], err = inTotoStatement(ref, a); err != nil {
			return name.Digest{}, err
		}
		replace[a.PredicateType] = true
	}
	existing, err := remote.Image(tag, opts...)
	var terr *transport.Error
	switch {
	case err == nil:
	case errors.As(err, &terr) && terr.StatusCode == 404:
		existing = nil
	default:
		return name.Digest{}, fmt.Errorf("reading the attestations of %s (%s): %w", ref, tag, err)
	}
	img, changed, err := attestationManifest(existing, statements, atts, replace, s)
	if err != nil {
		return name.Digest{}, fmt.Errorf("attestations of %s (%s): %w", ref, tag, err)
	}
	return pushManifest(tag, img, changed, "the attestations of "+ref.String(), opts)
}

// attestationManifest is existing (nil: none yet) with s's earlier layers of the predicate
// types in replace replaced by statements, each signed by s unless a layer of s's already holds exactly
// it. changed is false when the result is existing itself.
func attestationManifest(existing v1.Image, statements [][]byte, atts []attestation, replace map[string]bool, s signature.SignerVerifier) (v1.Image, bool, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	var kept []mutate.Addendum
	var before []v1.Hash
	reuse := map[string]mutate.Addendum{}
	if existing != nil {
		m, err := existing.Manifest()
		if err != nil {
			return nil, false, err
		}
		for _, l := range m.Layers {
			before = append(before, l.Digest)
			layer, err := existing.LayerByDigest(l.Digest)
			if err != nil {
				return nil, false, err
			}
			add := mutate.Addendum{Layer: layer, Annotations: l.Annotations, MediaType: l.MediaType}
			payload, ours := attestedBy(layer, l, replace, s)
			switch {
			case !ours:
				kept = append(kept, add)
			case reuse[string(payload)].Layer == nil:
				reuse[string(payload)] = add
			}
		}
	}
	adds := kept
	for i, st := range statements {
		if add, ok := reuse[string(st)]; ok {
			adds = append(adds, add)
			continue
		}
		env, err := dsse.WrapSigner(s, inTotoPayloadType).SignMessage(bytes.NewReader(st))
		if err != nil {
			return nil, false, fmt.Errorf("signing the %s statement: %w", atts[i].PredicateType, err)
		}
		adds = append(adds, mutate.Addendum{
			Layer:       static.NewLayer(env, dsseMediaType),
			Annotations: map[string]string{predicateTypeAnnotation: atts[i].PredicateType, signatureAnnotation: ""},
			MediaType:   dsseMediaType,
		})
	}
	var after []v1.Hash
	for _, a := range adds {
		d, err := a.Layer.Digest()
		if err != nil {
			return nil, false, err
		}
		after = append(after, d)
	}
	if existing != nil && slices.Equal(before, after) {
		return existing, false, nil
	}
	img, err := mutate.Append(base, adds...)
	return img, true, err
}

// maxEnvelope bounds what attestedBy reads of a layer: an SBOM of the image is some
// hundreds of kilobytes.
const maxEnvelope = 64 << 20

// attestedBy returns the statement in attestation layer l (descriptor d) when it is a DSSE
// envelope of one of predicateTypes whose signature verifies under v's key.
func attestedBy(l v1.Layer, d v1.Descriptor, predicateTypes map[string]bool, v signature.Verifier) ([]byte, bool) {
	if d.MediaType != dsseMediaType || !predicateTypes[d.Annotations[predicateTypeAnnotation]] || d.Size > maxEnvelope {
		return nil, false
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	env, err := io.ReadAll(io.LimitReader(rc, maxEnvelope))
	if err != nil {
		return nil, false
	}
	var payload []byte
	wv := dsse.WrapVerifier(v, dsse.WithExpectedPayloadType(inTotoPayloadType), dsse.WithDecodedPayload(&payload))
	if wv.VerifySignature(bytes.NewReader(env), nil) != nil {
		return nil, false
	}
	return payload, true
}

// Signed is what SignAndAttest pushed: the signature and the attestation manifests.
type Signed struct {
	Signature, Attestations name.Digest
}

// SignAndAttest is what a push with a key does to each image and index it pushes: sign ref
// (signDigest) and attest it (attest) with each SPDX document in sboms (an image's own SBOM; for an
// index, each platform's, as the workflow's keyless attest job does) and with b's SLSA
// provenance, so that cosign verify --key and cosign verify-attestation --key --type spdxjson
// and --type slsaprovenance1 accept it on any registry.
func SignAndAttest(ctx context.Context, ref name.Digest, s signature.SignerVerifier, sboms [][]byte, b Build, opts ...remote.Option) (Signed, error) {
	atts := make([]attestation, 0, len(sboms)+1)
	for _, doc := range sboms {
		atts = append(atts, attestation{PredicateType: predicateSPDX, Predicate: doc})
	}
	p, err := provenancePredicate(b)
	if err != nil {
		return Signed{}, fmt.Errorf("attesting %s: %w", ref, err)
	}
	atts = append(atts, p)
	var out Signed
	if out.Signature, err = signDigest(ctx, ref, s, opts...); err != nil {
		return Signed{}, err
	}
	if out.Attestations, err = attest(ctx, ref, s, atts, opts...); err != nil {
		return Signed{}, err
	}
	return out, nil
}

// SignAndAttestSBOMs is what `ci manifest --sign-key` does to the index it assembles from
// images built and pushed elsewhere (by `ci build --push`, one runner per platform): sign
// ref and attest it with each platform's SPDX document in sboms, so that cosign verify --key
// and cosign verify-attestation --key --type spdxjson accept the index as they accept one
// `ci build --push --sign-key` pushed. No provenance is stated for the index: it was not
// built here, and each platform image carries its own build's (attested by ci build).
func SignAndAttestSBOMs(ctx context.Context, ref name.Digest, s signature.SignerVerifier, sboms [][]byte, opts ...remote.Option) (Signed, error) {
	if len(sboms) == 0 {
		return Signed{}, fmt.Errorf("attesting %s: no SBOM given (each platform's is attested with the index)", ref)
	}
	atts := make([]attestation, 0, len(sboms))
	for _, doc := range sboms {
		atts = append(atts, attestation{PredicateType: predicateSPDX, Predicate: doc})
	}
	var out Signed
	var err error
	if out.Signature, err = signDigest(ctx, ref, s, opts...); err != nil {
		return Signed{}, err
	}
	if out.Attestations, err = attest(ctx, ref, s, atts, opts...); err != nil {
		return Signed{}, err
	}
	return out, nil
}
