package forge_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
)

// A build with a signing key leaves, for the digest its tags point at, a cosign signature
// (REPO:sha256-<hex>.sig) that verifies with sigstore's libraries under the key's public
// half and names exactly that digest.
func TestPushSignsWhatTheTagsName(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemKey, _ := cryptoutils.MarshalPrivateKeyToPEM(priv)
	req := w.request(dir)
	req.SignKey = filepath.Join(dir, "key.pem")
	if err := os.WriteFile(req.SignKey, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	res, err := runBuild(&fakeEngine{j: w.j}, req, forge.WithProgress(textSink(&log)))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	ref := res.Published.Digest
	h := strings.TrimPrefix(ref.DigestStr(), "sha256:")
	sigImg, err := remote.Image(ref.Repository.Tag("sha256-" + h + ".sig"))
	if err != nil {
		t.Fatalf("no signature for %s: %v\n%s", ref, err, log.String())
	}
	m, _ := sigImg.Manifest()
	if len(m.Layers) != 1 {
		t.Fatalf("signature manifest has %d layers, want 1", len(m.Layers))
	}
	l, _ := sigImg.LayerByDigest(m.Layers[0].Digest)
	rc, _ := l.Compressed()
	body, _ := io.ReadAll(rc)
	rc.Close()
	sig, _ := base64.StdEncoding.DecodeString(m.Layers[0].Annotations["dev.cosignproject.cosign/signature"])
	v, _ := signature.LoadVerifier(priv.Public(), crypto.SHA256)
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
		t.Fatalf("signature does not verify under the key's public half: %v", err)
	}
	var p payload.Cosign
	if err := p.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	if p.Image.DigestStr() != ref.DigestStr() || p.Image.Repository.Name() != ref.Repository.Name() {
		t.Errorf("signature names %s, want %s", p.Image, ref)
	}
	for _, tag := range w.tags(t) {
		if strings.HasSuffix(tag, ".sig") || strings.HasPrefix(tag, "sha256-") {
			continue
		}
		got, err := remote.Head(ref.Repository.Tag(tag))
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest.String() != ref.DigestStr() {
			t.Errorf("tag %s names %s, not the signed %s", tag, got.Digest, ref.DigestStr())
		}
	}
	if !strings.Contains(log.String(), "push: signed "+ref.DigestStr()) {
		t.Errorf("log does not say what was signed:\n%s", log.String())
	}
	checkAttestations(t, ref, res.Published.SBOM, v)
}

// checkAttestations: beside the signature, REPO:sha256-<hex>.att holds two DSSE envelopes
// that verify under the key (v), statements about exactly ref: the SBOM the build attached
// (sbom, its referrer artifact) as an SPDX predicate, and SLSA v1 provenance naming the
// lock's sources and the runtime image's digest.
func checkAttestations(t *testing.T, ref name.Digest, sbom *name.Digest, v signature.Verifier) {
	t.Helper()
	h := strings.TrimPrefix(ref.DigestStr(), "sha256:")
	att, err := remote.Image(ref.Repository.Tag("sha256-" + h + ".att"))
	if err != nil {
		t.Fatalf("no attestations for %s: %v", ref, err)
	}
	m, _ := att.Manifest()
	var types []string
	for _, l := range m.Layers {
		layer, _ := att.LayerByDigest(l.Digest)
		rc, _ := layer.Compressed()
		env, _ := io.ReadAll(rc)
		rc.Close()
		var payload []byte
		if err := dsse.WrapVerifier(v, dsse.WithDecodedPayload(&payload)).VerifySignature(bytes.NewReader(env), nil); err != nil {
			t.Fatalf("attestation %s does not verify under the key: %v", l.Annotations["predicateType"], err)
		}
		var st struct {
			PredicateType string            `json:"predicateType"`
			Subject       []json.RawMessage `json:"subject"`
			Predicate     json.RawMessage   `json:"predicate"`
		}
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Subject) != 1 || !strings.Contains(string(st.Subject[0]), h) {
			t.Errorf("%s statement is about %s, want only %s", st.PredicateType, st.Subject, ref)
		}
		types = append(types, st.PredicateType)
		switch st.PredicateType {
		case "https://spdx.dev/Document":
			want := sbomDocument(t, sbom)
			var got, w any
			json.Unmarshal(st.Predicate, &got)
			json.Unmarshal(want, &w)
			if !reflect.DeepEqual(got, w) {
				t.Errorf("the SPDX attestation's predicate is not the SBOM the build attached")
			}
		case "https://slsa.dev/provenance/v1":
			for _, want := range []string{`"resolvedDependencies"`, `"sha256":"`, `"runtime image linux/amd64"`, `"externalParameters"`} {
				if !strings.Contains(string(st.Predicate), want) {
					t.Errorf("provenance lacks %s: %s", want, st.Predicate)
				}
			}
			checkRuntimeImageDependency(t, st.Predicate)
		}
	}
	if strings.Join(types, " ") != "https://spdx.dev/Document https://slsa.dev/provenance/v1" {
		t.Errorf("attestations of %q, want the SBOM and the provenance", types)
	}
}

// checkRuntimeImageDependency: the provenance names the runtime image as the SBOM names the
// base, a pkg:oci purl by the digest pulled (forge gives sign the purl; sign applies no
// naming rule of its own).
func checkRuntimeImageDependency(t *testing.T, predicate []byte) {
	t.Helper()
	var p struct {
		BuildDefinition struct {
			ResolvedDependencies []struct {
				Name, URI string
				Digest    map[string]string
			}
		}
	}
	if err := json.Unmarshal(predicate, &p); err != nil {
		t.Fatal(err)
	}
	for _, d := range p.BuildDefinition.ResolvedDependencies {
		if d.Name == "runtime image linux/amd64" {
			if !strings.HasPrefix(d.URI, "pkg:oci/") || !strings.Contains(d.URI, "@sha256:"+d.Digest["sha256"]+"?repository_url=") {
				t.Errorf("the runtime image dependency is %+v, want the pkg:oci purl of its digest", d)
			}
			return
		}
	}
	t.Errorf("the provenance lists no runtime image: %s", predicate)
}

// sbomDocument is the SPDX document in the SBOM referrer artifact at ref.
func sbomDocument(t *testing.T, ref *name.Digest) []byte {
	t.Helper()
	if ref == nil {
		t.Fatal("the push attached no SBOM")
	}
	art, err := remote.Image(*ref)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := art.Layers()
	rc, _ := layers[0].Compressed()
	defer rc.Close()
	doc, _ := io.ReadAll(rc)
	return doc
}
