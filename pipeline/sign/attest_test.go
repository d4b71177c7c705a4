package sign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// testSBOM is a small SPDX 2.3 document, as an SBOM predicate.
const testSBOM = `{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT","name":"nginx-forge test",` +
	`"documentNamespace":"https://example.invalid/spdx/test","creationInfo":{"created":"2024-08-14T00:00:00Z","creators":["Tool: nginx-forge"]},` +
	`"packages":[{"name":"openssl","SPDXID":"SPDXRef-openssl","versionInfo":"3.5.7","downloadLocation":"NOASSERTION",` +
	`"externalRefs":[{"referenceCategory":"SECURITY","referenceType":"cpe23Type","referenceLocator":"cpe:2.3:a:openssl:openssl:3.5.7:*:*:*:*:*:*:*"}]}]}`

// testBuild is the provenance input of a build of the AWS-LC lock (git-pinned sources beside
// tarballs) for linux/amd64.
func testBuild(t *testing.T) Build {
	t.Helper()
	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "aws-lc.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The lock read as pipeline/forge reads it for a provenance: a git source by repository,
	// tag and commit, a tarball by URL and SHA-256.
	params := LockParams{SourceDateEpoch: l.SourceDateEpoch, BuilderImage: l.Images.Builder.Pinned(), RuntimeImage: l.Images.Runtime.Pinned()}
	var sources []Source
	for _, c := range l.Components {
		params.Components = append(params.Components, NameVersion{Name: c.Name, Version: c.Version})
		src := Source{Name: c.Name, URL: c.URL, SHA256: c.SHA256}
		if c.Git != nil {
			src = Source{Name: c.Name, GitRepository: c.Git.Repository, GitTag: c.Git.Tag, GitCommit: c.Git.Commit}
		}
		sources = append(sources, src)
	}
	return Build{Lock: params, Engine: "dagger", Platforms: []PlatformBuild{{
		Platform: "linux/amd64", CPU: "x86-64-v2", Optimize: "lto", Modules: []string{"http_v3"}, Sources: sources,
		Base: Dependency{
			URI:    "pkg:oci/base-nossl-debian13@sha256:" + strings.Repeat("ab", 32) + "?repository_url=gcr.io%2Fdistroless%2Fbase-nossl-debian13",
			Digest: "sha256:" + strings.Repeat("ab", 32),
		},
		Builder: Dependency{
			URI:    "pkg:oci/ubuntu@sha256:" + strings.Repeat("ef", 32) + "?repository_url=docker.io%2Flibrary%2Fubuntu",
			Digest: "sha256:" + strings.Repeat("ef", 32),
		},
	}}}
}

// statement is what a verifier reads out of an attestation layer.
type statement struct {
	Type          string `json:"_type"`
	PredicateType string `json:"predicateType"`
	Subject       []struct {
		Name   string            `json:"name"`
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
	Predicate json.RawMessage `json:"predicate"`
}

// attestations reads REPO:sha256-<hex>.att the way cosign verify-attestation --key does,
// with go-containerregistry and sigstore's DSSE verifier only: every DSSE layer whose envelope
// verifies under pub and whose statement's subject is exactly ref's digest, with the layer's
// predicateType annotation. Layers that fail are counted in bad.
func attestations(t *testing.T, ref name.Digest, pub crypto.PublicKey) (good []statement, bad int) {
	t.Helper()
	h, _ := v1.NewHash(ref.DigestStr())
	img, err := remote.Image(ref.Repository.Tag(h.Algorithm + "-" + h.Hex + ".att"))
	if err != nil {
		t.Fatalf("reading the attestations of %s: %v", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Layers {
		if l.MediaType != "application/vnd.dsse.envelope.v1+json" {
			t.Errorf("attestation layer of media type %s", l.MediaType)
			continue
		}
		layer, _ := img.LayerByDigest(l.Digest)
		rc, err := layer.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		env, _ := io.ReadAll(rc)
		rc.Close()
		var payload []byte
		if dsse.WrapVerifier(v, dsse.WithDecodedPayload(&payload)).VerifySignature(bytes.NewReader(env), nil) != nil {
			bad++
			continue
		}
		var st statement
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatalf("statement: %v", err)
		}
		if len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != ref.DigestStr() || st.Subject[0].Name != ref.Repository.String() {
			t.Errorf("statement subject %+v, want exactly %s", st.Subject, ref)
			bad++
			continue
		}
		if l.Annotations["predicateType"] != st.PredicateType {
			t.Errorf("layer annotation predicateType %q, statement %q", l.Annotations["predicateType"], st.PredicateType)
		}
		good = append(good, st)
	}
	return good, bad
}

// A pushed index signed and attested with a key carries, under that key, an in-toto v1
// statement of the SBOM (the document itself as the predicate) and of SLSA v1 provenance
// naming the lock's sources by SHA-256 or git commit and the base image by digest; under
// another key nothing verifies. A rerun pushes nothing new; a second key's attestations go
// beside the first's.
func TestAttestVerifiesWithSigstore(t *testing.T) {
	ref := pushIndex(t)
	keyA, pubA := newKey(t)
	keyB, pubB := newKey(t)
	_, pubOther := newKey(t)
	sa, err := LoadKey(keyA)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	build := testBuild(t)
	first, err := SignAndAttest(ctx, ref, sa, [][]byte{[]byte(testSBOM)}, build)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(t, ref, pubA); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	good, bad := attestations(t, ref, pubA)
	if len(good) != 2 || bad != 0 {
		t.Fatalf("%d attestations verify under the key (%d do not), want the SBOM and the provenance", len(good), bad)
	}
	checkSBOMStatement(t, good[0])
	checkProvenanceStatement(t, good[1], build)
	if good, _ := attestations(t, ref, pubOther); len(good) != 0 {
		t.Errorf("%d attestations verify under an unrelated key", len(good))
	}

	again, err := SignAndAttest(ctx, ref, sa, [][]byte{[]byte(testSBOM)}, build)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("a rerun with the same key and statements pushed %+v, want the same %+v", again, first)
	}
	sb, err := LoadKey(keyB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SignAndAttest(ctx, ref, sb, [][]byte{[]byte(testSBOM)}, build); err != nil {
		t.Fatal(err)
	}
	for k, pub := range map[string]crypto.PublicKey{"A": pubA, "B": pubB} {
		if good, bad := attestations(t, ref, pub); len(good) != 2 || bad != 2 {
			t.Errorf("after key B attested: key %s's attestations: %d verify, %d do not; want 2 and 2 (the other key's)", k, len(good), bad)
		}
	}
}

// checkSBOMStatement: the SPDX statement's predicate is the SBOM document itself.
func checkSBOMStatement(t *testing.T, st statement) {
	t.Helper()
	if st.Type != "https://in-toto.io/Statement/v1" || st.PredicateType != "https://spdx.dev/Document" {
		t.Fatalf("first statement is %s of %s, want an in-toto v1 statement of https://spdx.dev/Document", st.Type, st.PredicateType)
	}
	var got, want any
	if err := json.Unmarshal(st.Predicate, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(testSBOM), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SBOM predicate differs from the SBOM:\n got %s\nwant %s", st.Predicate, testSBOM)
	}
}

// provenance is the part of an SLSA v1 predicate the checks read.
type provenance struct {
	BuildDefinition struct {
		BuildType            string         `json:"buildType"`
		ExternalParameters   map[string]any `json:"externalParameters"`
		ResolvedDependencies []struct {
			Name   string            `json:"name"`
			URI    string            `json:"uri"`
			Digest map[string]string `json:"digest"`
		} `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID                  string `json:"id"`
			BuilderDependencies []struct {
				Name   string            `json:"name"`
				URI    string            `json:"uri"`
				Digest map[string]string `json:"digest"`
			} `json:"builderDependencies"`
		} `json:"builder"`
	} `json:"runDetails"`
}

// checkProvenanceStatement: the provenance names the builder and build type, the lock's
// components and the platform's flags as external parameters, and every source by its
// pin: a tarball by SHA-256, a git source by commit; the base image by the pulled digest.
func checkProvenanceStatement(t *testing.T, st statement, b Build) {
	t.Helper()
	if st.PredicateType != "https://slsa.dev/provenance/v1" {
		t.Fatalf("second statement is of %s, want https://slsa.dev/provenance/v1", st.PredicateType)
	}
	var p provenance
	if err := json.Unmarshal(st.Predicate, &p); err != nil {
		t.Fatal(err)
	}
	if p.RunDetails.Builder.ID != cmpOr(b.Origin.BuilderID, unnamedBuilderID) || p.BuildDefinition.BuildType != buildType {
		t.Errorf("builder %q, build type %q", p.RunDetails.Builder.ID, p.BuildDefinition.BuildType)
	}
	ext, _ := json.Marshal(p.BuildDefinition.ExternalParameters)
	for _, want := range []string{`"platform":"linux/amd64"`, `"cpu":"x86-64-v2"`, `"optimize":"lto"`, `"modules":["http_v3"]`, `"source_date_epoch":`} {
		if !strings.Contains(string(ext), want) {
			t.Errorf("externalParameters lack %s: %s", want, ext)
		}
	}
	deps := p.BuildDefinition.ResolvedDependencies
	var git, tarball int
	for _, c := range b.Platforms[0].Sources {
		i := slices.IndexFunc(deps, func(d struct {
			Name   string            `json:"name"`
			URI    string            `json:"uri"`
			Digest map[string]string `json:"digest"`
		}) bool {
			return d.Name == c.Name
		})
		switch {
		case i < 0:
			t.Errorf("provenance lacks the source %s", c.Name)
		case c.GitCommit != "":
			git++
			if deps[i].Digest["gitCommit"] != c.GitCommit || deps[i].URI != "git+"+c.GitRepository+"@refs/tags/"+c.GitTag {
				t.Errorf("git source %s: %+v, want commit %s", c.Name, deps[i], c.GitCommit)
			}
		default:
			tarball++
			if deps[i].Digest["sha256"] != c.SHA256 || deps[i].URI != c.URL {
				t.Errorf("tarball %s: %+v, want sha256 %s", c.Name, deps[i], c.SHA256)
			}
		}
	}
	for _, c := range b.Lock.Components {
		if !strings.Contains(string(ext), `"name":"`+c.Name+`","version":"`+c.Version+`"`) {
			t.Errorf("externalParameters lack %s %s: %s", c.Name, c.Version, ext)
		}
	}
	if git == 0 || tarball == 0 {
		t.Errorf("the lock has %d git and %d tarball sources: both kinds must be checked", git, tarball)
	}
	// The images as the build pipeline names them (the SBOM's pkg:oci purls), by the digest
	// pulled.
	last := deps[len(deps)-1]
	wantBase := b.Platforms[0].Base.URI
	if last.URI != wantBase || "sha256:"+last.Digest["sha256"] != b.Platforms[0].Base.Digest {
		t.Errorf("base image dependency %+v, want %s", last, wantBase)
	}
	if !strings.Contains(string(ext), `"engine":"dagger"`) {
		t.Errorf("externalParameters lack the engine: %s", ext)
	}
	// The builder image by the digest the engine pulled.
	bd := p.RunDetails.Builder.BuilderDependencies
	wantBuilder := "pkg:oci/ubuntu@sha256:" + strings.Repeat("ef", 32) + "?repository_url=docker.io%2Flibrary%2Fubuntu"
	if len(bd) != 1 || bd[0].Name != "builder image linux/amd64" || bd[0].URI != wantBuilder || bd[0].Digest["sha256"] != strings.Repeat("ef", 32) {
		t.Errorf("builder dependencies %+v, want %s", bd, wantBuilder)
	}
}

// An index of two platforms is attested with each platform's SBOM (as the workflow's keyless
// attest job does) and one provenance naming both builds and both runtime images.
func TestAttestIndexOfTwoPlatforms(t *testing.T) {
	ref := pushIndex(t)
	key, pub := newKey(t)
	s, err := LoadKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b := testBuild(t)
	arm := b.Platforms[0]
	arm.Platform, arm.CPU, arm.Base.Digest = "linux/arm64", "armv8.2-a", "sha256:"+strings.Repeat("cd", 32)
	b.Platforms = append(b.Platforms, arm)
	armSBOM := strings.Replace(testSBOM, `"name":"nginx-forge test"`, `"name":"nginx-forge test arm64"`, 1)
	if _, err := SignAndAttest(context.Background(), ref, s, [][]byte{[]byte(testSBOM), []byte(armSBOM)}, b); err != nil {
		t.Fatal(err)
	}
	good, bad := attestations(t, ref, pub)
	if len(good) != 3 || bad != 0 {
		t.Fatalf("%d attestations verify (%d do not), want two SBOMs and the provenance", len(good), bad)
	}
	if !strings.Contains(string(good[1].Predicate), "nginx-forge test arm64") {
		t.Errorf("second SBOM statement is not the arm64 SBOM: %.200s", good[1].Predicate)
	}
	p := string(good[2].Predicate)
	for _, want := range []string{`"linux/arm64"`, `"armv8.2-a"`, strings.Repeat("cd", 32), strings.Repeat("ab", 32)} {
		if !strings.Contains(p, want) {
			t.Errorf("the index's provenance lacks %s", want)
		}
	}
}

// An image dependency is named as the build pipeline gives it (forge's imageDependency:
// the SBOM's purl, or none for an image read from a file), by a digest that must be
// ALGORITHM:HEX.
func TestImageDescriptorTakesTheDependencyAsGiven(t *testing.T) {
	hex := strings.Repeat("cd", 32)
	for _, uri := range []string{"pkg:oci/ubuntu@sha256:" + hex + "?repository_url=docker.io%2Flibrary%2Fubuntu", ""} {
		d, err := imageDescriptor("image", Dependency{URI: uri, Digest: "sha256:" + hex})
		if err != nil || d.GetUri() != uri || d.GetDigest()["sha256"] != hex || d.Validate() != nil {
			t.Errorf("%q: %v, %v; want uri %q and digest sha256:%s", uri, d, err, uri, hex)
		}
	}
	for _, digest := range []string{"", "sha256", "sha256:"} {
		if _, err := imageDescriptor("image", Dependency{URI: "pkg:oci/y", Digest: digest}); err == nil {
			t.Errorf("the digest %q was accepted", digest)
		}
	}
}
