package sign

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"
)

// PredicateVerificationSummary is SLSA's verification summary (VSA) v1, the predicate a
// rebuild attestation states: cosign verify-attestation --type with this URI accepts it.
const PredicateVerificationSummary = "https://slsa.dev/verification_summary/v1"

// RebuildMatched is the verifiedLevels entry a rebuild attestation states: the subject was
// built again from its provenance's inputs and gave the same digest. The VSA format leaves
// custom levels to the verifier (none may start with SLSA_).
const RebuildMatched = "NGINX_FORGE_REBUILD_MATCHED"

// Rebuild is what a rebuild that matched states about its subject.
type Rebuild struct {
	// Verifier is who rebuilt: the builder id of the rebuilding run (a workflow, a
	// repository's ci), "" for this program with no repository known.
	Verifier string
	// Engine is the engine that rebuilt ("dagger", "host").
	Engine string
	// Provenance is the digest of the attestation layer whose provenance was rebuilt.
	Provenance string
	// Time is when the rebuild finished.
	Time time.Time
}

// AttestRebuild signs a VSA about ref with s, stating that rb rebuilt it to the same digest
// from the provenance whose attestation layer rb names, and attaches it beside ref's other
// attestations (a later rebuild by the same key replaces it).
func AttestRebuild(ctx context.Context, ref name.Digest, s signature.SignerVerifier, rb Rebuild, opts ...remote.Option) (name.Digest, error) {
	// The engine that rebuilt is part of who verified: a rebuild on the other engine is
	// another verifier's word.
	version := builderVersion()
	version["engine"] = rb.Engine
	verifier := map[string]any{"id": rb.Verifier, "version": version}
	if rb.Verifier == "" {
		verifier["id"] = unnamedBuilderID + "/rebuild"
	}
	vsa := map[string]any{
		"verifier":     verifier,
		"timeVerified": rb.Time.UTC().Format(time.RFC3339),
		"resourceUri":  ref.String(),
		// The policy a rebuild checks: README's "Verifying it" says what it is.
		"policy": map[string]any{"uri": buildType + "#rebuild"},
		"inputAttestations": []any{map[string]any{
			"uri":    ref.Context().String() + ":" + mustAttTag(ref),
			"digest": map[string]string{"sha256": trimAlgo(rb.Provenance)},
		}},
		"verificationResult": "PASSED",
		"verifiedLevels":     []string{RebuildMatched},
		"slsaVersion":        "1.0",
	}
	raw, err := json.Marshal(vsa)
	if err != nil {
		return name.Digest{}, fmt.Errorf("rebuild attestation of %s: %w", ref, err)
	}
	return attest(ctx, ref, s, []attestation{{PredicateType: PredicateVerificationSummary, Predicate: raw}}, opts...)
}

func mustAttTag(ref name.Digest) string {
	t, err := attestationTag(ref)
	if err != nil {
		return ""
	}
	return t.TagStr()
}

func trimAlgo(d string) string {
	if len(d) > 7 && d[:7] == "sha256:" {
		return d[7:]
	}
	return d
}
