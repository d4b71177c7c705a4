package sign

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

// pushImage pushes a random image to the in-process registry and returns it by digest.
func pushImage(t *testing.T) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref, err := name.NewDigest(registrytest.Host(t) + "/forge/nginx@" + d.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

// publicKeyFile writes the public half of the key at keyPath as cosign.pub holds one.
func publicKeyFile(t *testing.T, keyPath string) string {
	t.Helper()
	s, err := LoadKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadProvenanceRoundTrip: what SignAndAttest states, ReadProvenance reads back under
// the same key (engine, platform flags, origin), Check accepts the same build and names the
// first field of another, and nothing verifies under another key.
func TestReadProvenanceRoundTrip(t *testing.T) {
	ctx := context.Background()
	ref := pushImage(t)
	key, _ := newKey(t)
	s, err := LoadKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b := testBuild(t)
	b.Origin = Origin{BuilderID: "https://github.com/acme/edge-nginx/.github/workflows/build.yml@refs/heads/main",
		Repository: "https://github.com/acme/edge-nginx", Ref: "refs/heads/main", Revision: strings.Repeat("1f", 20)}
	if _, err := SignAndAttest(ctx, ref, s, [][]byte{[]byte(testSBOM)}, b); err != nil {
		t.Fatal(err)
	}
	v, err := LoadPublicKey("--key", publicKeyFile(t, key))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadProvenance(ctx, ref, v)
	if err != nil {
		t.Fatal(err)
	}
	want := RecordedPlatform{Platform: "linux/amd64", CPU: "x86-64-v2", Optimize: "lto", Modules: []string{"http_v3"}}
	if rec.Engine != "dagger" || len(rec.Platforms) != 1 || !reflect.DeepEqual(rec.Platforms[0], want) {
		t.Errorf("read back engine %q platforms %+v, want dagger and %+v", rec.Engine, rec.Platforms, want)
	}
	if rec.Origin.Revision != b.Origin.Revision || rec.Origin.Repository != b.Origin.Repository || rec.Origin.Ref != b.Origin.Ref || rec.Origin.BuilderID != b.Origin.BuilderID {
		t.Errorf("read back origin %+v, want %+v", rec.Origin, b.Origin)
	}
	if !strings.HasPrefix(rec.Attestation, "sha256:") {
		t.Errorf("attestation layer %q", rec.Attestation)
	}
	// The same build without its images' digests (what a rebuild knows before building).
	same := b
	same.Platforms = append([]PlatformBuild{}, b.Platforms...)
	same.Platforms[0].Base, same.Platforms[0].Builder = Dependency{}, Dependency{}
	same.Origin = Origin{}
	if err := rec.Check(same); err != nil {
		t.Errorf("Check refuses the build that was recorded: %v", err)
	}
	cases := map[string]func(*Build){
		"lock.components[0].version": func(b *Build) { b.Lock.Components[0].Version = "9.9.9" },
		"lock.source_date_epoch":     func(b *Build) { b.Lock.SourceDateEpoch++ },
		"platforms[0].optimize":      func(b *Build) { b.Platforms[0].Optimize = "none" },
		"engine":                     func(b *Build) { b.Engine = "host" },
		"source 1": func(b *Build) {
			b.Platforms[0].Sources[0].SHA256 = strings.Repeat("0", 64)
			b.Platforms[0].Sources[0].GitCommit = strings.Repeat("0", 40)
		},
	}
	for field, change := range cases {
		other := same
		other.Lock.Components = append([]NameVersion{}, same.Lock.Components...)
		other.Platforms = []PlatformBuild{same.Platforms[0]}
		other.Platforms[0].Sources = append([]Source{}, same.Platforms[0].Sources...)
		change(&other)
		err := rec.Check(other)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s changed: Check says %v, want it named", field, err)
		}
	}
	otherKey, _ := newKey(t)
	ov, err := LoadPublicKey("--key", publicKeyFile(t, otherKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProvenance(ctx, ref, ov); !errors.Is(err, ErrNoProvenance) {
		t.Errorf("under another key: %v, want ErrNoProvenance", err)
	}
	if _, err := ReadProvenance(ctx, pushImage(t), v); !errors.Is(err, ErrNoProvenance) {
		t.Errorf("an image with no attestations: %v, want ErrNoProvenance", err)
	}
}

// TestAttestRebuild: the rebuild attestation is a VSA about the image, signed by the key,
// beside the provenance (which stays).
func TestAttestRebuild(t *testing.T) {
	ctx := context.Background()
	ref := pushImage(t)
	key, pub := newKey(t)
	s, err := LoadKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SignAndAttest(ctx, ref, s, [][]byte{[]byte(testSBOM)}, testBuild(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := AttestRebuild(ctx, ref, s, Rebuild{Engine: "host", Provenance: "sha256:" + strings.Repeat("ab", 32)}); err != nil {
		t.Fatal(err)
	}
	good, bad := attestations(t, ref, pub)
	if bad != 0 || len(good) != 3 {
		t.Fatalf("%d attestations verify (%d do not), want SBOM, provenance and rebuild", len(good), bad)
	}
	vsa := good[2]
	if vsa.PredicateType != PredicateVerificationSummary {
		t.Fatalf("third attestation is %s", vsa.PredicateType)
	}
	for _, want := range []string{`"verificationResult":"PASSED"`, `"` + RebuildMatched + `"`, `"engine":"host"`, `"resourceUri":"` + ref.String() + `"`} {
		if !strings.Contains(strings.ReplaceAll(string(vsa.Predicate), " ", ""), want) {
			t.Errorf("the VSA lacks %s: %s", want, vsa.Predicate)
		}
	}
}

// TestLoadPublicKeyRefusals: a private key, a non-key and a missing file are refused naming
// the flag and the file.
func TestLoadPublicKeyRefusals(t *testing.T) {
	priv, _ := newKey(t)
	junk := filepath.Join(t.TempDir(), "junk.pub")
	if err := os.WriteFile(junk, []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{priv, junk, filepath.Join(t.TempDir(), "missing.pub")} {
		_, err := LoadPublicKey("--key", path)
		if err == nil || !strings.Contains(err.Error(), "--key "+path) {
			t.Errorf("LoadPublicKey(%s) = %v, want a refusal naming --key and the file", path, err)
		}
	}
}

// TestReadProvenanceRefusesAReplayedStatement: a registry that serves image A's attestations
// (signed by the right key) under image B's attestation tag does not make B's provenance: the
// statement is about A's digest, and ReadProvenance says so.
func TestReadProvenanceRefusesAReplayedStatement(t *testing.T) {
	ctx := context.Background()
	a, b := pushImage(t), pushImage(t)
	key, _ := newKey(t)
	s, err := LoadKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SignAndAttest(ctx, a, s, [][]byte{[]byte(testSBOM)}, testBuild(t)); err != nil {
		t.Fatal(err)
	}
	aTag, err := attestationTag(a)
	if err != nil {
		t.Fatal(err)
	}
	bTag, err := attestationTag(b)
	if err != nil {
		t.Fatal(err)
	}
	att, err := remote.Image(aTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(bTag, att); err != nil {
		t.Fatal(err)
	}
	v, err := LoadPublicKey("--key", publicKeyFile(t, key))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProvenance(ctx, a, v); err != nil {
		t.Fatalf("A's own provenance: %v", err)
	}
	if _, err := ReadProvenance(ctx, b, v); err == nil || !strings.Contains(err.Error(), "about another digest") {
		t.Errorf("A's statement replayed under B's tag: %v, want a refusal saying it is about another digest", err)
	}
}
